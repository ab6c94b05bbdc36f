// Writes a small, learnable classification data set as gzipped MNIST-format IDX files, for the
// end-to-end tests: class c is a fixed random prototype image plus per-sample noise.
//   make_idx_dataset OUT_DIR N_TRAIN N_TEST [ROWS COLS CLASSES SEED]
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/random.hpp"

namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;
constexpr std::uint32_t kLabelsMagic = 0x00000801;
constexpr int kNoiseAmplitude = 60;  // out of 255: classes stay separable but not trivially
constexpr std::uint64_t kPrototypeStream = 1;
constexpr std::uint64_t kTrainStream = 2;
constexpr std::uint64_t kTestStream = 3;

void put_u32(std::vector<unsigned char>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(v >> shift));
}

bool write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                  static_cast<int>(bytes.size());
  return gzclose(f) == Z_OK && ok;
}

bool write_split(const std::string& dir, const std::string& prefix, int n, int rows, int cols,
                 int classes, const std::vector<std::vector<int>>& prototypes,
                 dl::RandomStream& rng) {
  std::vector<unsigned char> images, labels;
  put_u32(images, kImagesMagic);
  put_u32(images, static_cast<std::uint32_t>(n));
  put_u32(images, static_cast<std::uint32_t>(rows));
  put_u32(images, static_cast<std::uint32_t>(cols));
  put_u32(labels, kLabelsMagic);
  put_u32(labels, static_cast<std::uint32_t>(n));
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng.below(static_cast<std::uint64_t>(classes)));
    labels.push_back(static_cast<unsigned char>(label));
    for (int p = 0; p < rows * cols; ++p) {
      const int noise = static_cast<int>(rng.below(2 * kNoiseAmplitude + 1)) - kNoiseAmplitude;
      int v = prototypes[static_cast<std::size_t>(label)][static_cast<std::size_t>(p)] + noise;
      v = v < 0 ? 0 : (v > 255 ? 255 : v);
      images.push_back(static_cast<unsigned char>(v));
    }
  }
  return write_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz", images) &&
         write_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", labels);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR N_TRAIN N_TEST [ROWS COLS CLASSES SEED]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int n_train = std::atoi(argv[2]);
  const int n_test = std::atoi(argv[3]);
  const int rows = argc > 4 ? std::atoi(argv[4]) : 28;
  const int cols = argc > 5 ? std::atoi(argv[5]) : 28;
  const int classes = argc > 6 ? std::atoi(argv[6]) : 10;
  const std::uint64_t seed = argc > 7 ? std::strtoull(argv[7], nullptr, 10) : 7;
  dl::RandomStream proto_rng(seed, kPrototypeStream);
  std::vector<std::vector<int>> prototypes(static_cast<std::size_t>(classes));
  for (auto& p : prototypes) {
    p.resize(static_cast<std::size_t>(rows * cols));
    for (int& v : p) v = static_cast<int>(proto_rng.below(256));
  }
  dl::RandomStream train_rng(seed, kTrainStream), test_rng(seed, kTestStream);
  // Made when missing, as a test script expects of an output folder.
  std::error_code made;
  std::filesystem::create_directories(dir, made);
  if (made) {
    std::fprintf(stderr, "%s: cannot create the folder: %s\n", dir.c_str(), made.message().c_str());
    return 1;
  }
  if (!write_split(dir, "train", n_train, rows, cols, classes, prototypes, train_rng) ||
      !write_split(dir, "t10k", n_test, rows, cols, classes, prototypes, test_rng)) {
    std::fprintf(stderr, "%s: cannot write the data set files\n", dir.c_str());
    return 1;
  }
  return 0;
}
