// Writes a small, learnable colour data set in the binary CIFAR-10 or CIFAR-100 layout, for the
// end-to-end tests (there is no CIFAR on the test machines): class c is a fixed random 3 x 32 x 32
// prototype plus per-sample noise, stored as the official files are (label byte(s), then the red,
// green and blue planes). CIFAR-10: the training records spread over data_batch_1.bin ..
// data_batch_5.bin (uneven sizes, so a reader cannot assume 10,000 per file), and test_batch.bin.
// CIFAR-100: train.bin and test.bin, with coarse label = fine label / 5.
// NOISE (default 70, out of 255) sets how hard the classes are to tell apart.
//   make_cifar_dataset OUT_DIR N_TRAIN N_TEST [cifar10|cifar100] [SEED] [NOISE]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/random.hpp"
#include "data/cifar_format.hpp"

namespace {

constexpr int kDefaultNoise = 70;  // out of 255: separable, not trivially
constexpr int kMaxByte = 255;
constexpr int kFineClassesPerCoarse =
    dl::cifar::kCifar100FineClasses / dl::cifar::kCifar100CoarseClasses;
constexpr std::uint64_t kPrototypeStream = 1;
constexpr std::uint64_t kTrainStream = 2;
constexpr std::uint64_t kTestStream = 3;

struct Generator {
  bool cifar100 = false;
  int noise = kDefaultNoise;
  std::vector<std::vector<int>> prototypes;

  int classes() const {
    return cifar100 ? dl::cifar::kCifar100FineClasses : dl::cifar::kCifar10Classes;
  }

  std::vector<unsigned char> records(int n, dl::RandomStream& rng) const {
    std::vector<unsigned char> out;
    for (int i = 0; i < n; ++i) {
      const int label = static_cast<int>(rng.below(static_cast<std::uint64_t>(classes())));
      if (cifar100) out.push_back(static_cast<unsigned char>(label / kFineClassesPerCoarse));
      out.push_back(static_cast<unsigned char>(label));
      for (int v : prototypes[static_cast<std::size_t>(label)]) {
        v += static_cast<int>(rng.below(2 * static_cast<std::uint64_t>(noise) + 1)) - noise;
        out.push_back(static_cast<unsigned char>(v < 0 ? 0 : (v > kMaxByte ? kMaxByte : v)));
      }
    }
    return out;
  }
};

bool write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR N_TRAIN N_TEST [cifar10|cifar100] [SEED] [NOISE]\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int n_train = std::atoi(argv[2]);
  const int n_test = std::atoi(argv[3]);
  Generator gen;
  gen.cifar100 = argc > 4 && std::string(argv[4]) == "cifar100";
  const std::uint64_t seed = argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 7;
  gen.noise = argc > 6 ? std::atoi(argv[6]) : kDefaultNoise;
  dl::RandomStream proto_rng(seed, kPrototypeStream);
  gen.prototypes.resize(static_cast<std::size_t>(gen.classes()));
  for (auto& p : gen.prototypes) {
    p.resize(dl::cifar::kImageBytes);
    for (int& v : p) v = static_cast<int>(proto_rng.below(kMaxByte + 1));
  }
  dl::RandomStream train_rng(seed, kTrainStream), test_rng(seed, kTestStream);
  // Made when missing, as a test script expects of an output folder.
  std::error_code made;
  std::filesystem::create_directories(dir, made);
  if (made) {
    std::fprintf(stderr, "%s: cannot create the folder: %s\n", dir.c_str(), made.message().c_str());
    return 1;
  }
  bool ok = true;
  if (gen.cifar100) {
    ok = write_file(dir + "/" + std::string(dl::cifar::kCifar100TrainFile),
                    gen.records(n_train, train_rng)) &&
         write_file(dir + "/" + std::string(dl::cifar::kCifar100TestFile),
                    gen.records(n_test, test_rng));
  } else {
    // Batch b gets (b + 1) shares of 15: uneven on purpose.
    const int files = static_cast<int>(dl::cifar::kCifar10TrainFiles.size());
    const int shares = files * (files + 1) / 2;
    int written = 0;
    for (int b = 0; b < files && ok; ++b) {
      const int n = b + 1 == files ? n_train - written : n_train * (b + 1) / shares;
      written += n;
      ok = write_file(dir + "/" + std::string(dl::cifar::kCifar10TrainFiles[b]),
                      gen.records(n, train_rng));
    }
    ok = ok && write_file(dir + "/" + std::string(dl::cifar::kCifar10TestFile),
                          gen.records(n_test, test_rng));
  }
  if (!ok) {
    std::fprintf(stderr, "%s: cannot write the data set files\n", dir.c_str());
    return 1;
  }
  return 0;
}
