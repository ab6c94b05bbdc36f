// The CIFAR-10 / CIFAR-100 binary reader on small files written here: record layout (label
// byte(s), then channel planes kept as NCHW samples), the split's file order and limits, and one
// clear DataError for each defect, naming the file, the record and the fix.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/cifar_format.hpp"
#include "data/cifar_reader.hpp"
#include "data/data_sources.hpp"
#include "error_capture.hpp"
#include "idx_test_files.hpp"

using Catch::Matchers::Contains;
using dl::test::Bytes;
using dl::test::data_error_message;
namespace cifar = dl::cifar;

namespace {

constexpr std::size_t kPlane = cifar::kImageBytes / cifar::kChannels;

// Record r of a file: its labels, then pixel p of the image = (seed + r * 7 + p) mod 256.
Bytes records(const std::vector<Bytes>& labels, std::uint32_t seed) {
  Bytes out;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    out.insert(out.end(), labels[r].begin(), labels[r].end());
    for (std::size_t p = 0; p < cifar::kImageBytes; ++p)
      out.push_back(static_cast<std::uint8_t>(seed + r * 7 + p));
  }
  return out;
}

// A CIFAR-10 directory: batch b holds `per_batch[b]` records labelled (b + r) mod 10.
void write_cifar10(const dl::test::TempDir& dir, const std::vector<int>& per_batch, int test) {
  for (std::size_t b = 0; b < cifar::kCifar10TrainFiles.size(); ++b) {
    std::vector<Bytes> labels;
    for (int r = 0; r < per_batch[b]; ++r)
      labels.push_back({static_cast<std::uint8_t>((b + r) % cifar::kCifar10Classes)});
    dl::test::write_plain(dir.file(std::string(cifar::kCifar10TrainFiles[b])),
                          records(labels, static_cast<std::uint32_t>(b)));
  }
  dl::test::write_plain(dir.file(std::string(cifar::kCifar10TestFile)),
                        records(std::vector<Bytes>(test, Bytes{3}), 99));
}

dl::CifarSource source10(const dl::test::TempDir& dir) {
  return dl::CifarSource{dir.file(""), false, false};
}

std::string read_error(const dl::CifarSource& source, dl::CifarSplit split) {
  return data_error_message([&] { dl::read_cifar_split(source, split); });
}

}  // namespace

TEST_CASE("CIFAR-10: the five batches in order, labels and NCHW pixels as stored", "[cifar]") {
  dl::test::TempDir dir;
  write_cifar10(dir, {2, 1, 3, 1, 2}, 4);
  const dl::CifarRecords train = dl::read_cifar_split(source10(dir), dl::CifarSplit::kTrain);
  REQUIRE(train.count == 9);
  REQUIRE(train.pixels.size() == 9 * cifar::kImageBytes);
  // Record 3 is batch 3's first: label (2 + 0) mod 10, pixels from seed 2.
  CHECK(train.labels == std::vector<std::int32_t>{0, 1, 1, 2, 3, 4, 3, 4, 5});
  const std::uint8_t* third = train.pixels.data() + 3 * cifar::kImageBytes;
  CHECK(third[0] == 2);  // red plane, row 0, column 0
  CHECK(third[kPlane + 33] == static_cast<std::uint8_t>(2 + kPlane + 33));  // green, row 1, col 1
  CHECK(third[2 * kPlane] == static_cast<std::uint8_t>(2 + 2 * kPlane));    // blue plane starts
  const dl::CifarRecords test = dl::read_cifar_split(source10(dir), dl::CifarSplit::kTest);
  CHECK(test.count == 4);
  CHECK(test.labels == std::vector<std::int32_t>(4, 3));
}

TEST_CASE("CIFAR: a limit reads the first records across batches and stops", "[cifar]") {
  dl::test::TempDir dir;
  write_cifar10(dir, {2, 1, 3, 1, 2}, 4);
  // A damaged last batch is not reached by a limit of 4 records.
  dl::test::write_plain(dir.file("data_batch_5.bin"), Bytes{200});
  const dl::CifarRecords four = dl::read_cifar_split(source10(dir), dl::CifarSplit::kTrain, 4);
  CHECK(four.count == 4);
  CHECK(four.labels == std::vector<std::int32_t>{0, 1, 1, 2});
  CHECK_THAT(read_error(source10(dir), dl::CifarSplit::kTrain), Contains("data_batch_5.bin"));
}

TEST_CASE("CIFAR-100: coarse and fine labels, either set as the class", "[cifar]") {
  dl::test::TempDir dir;
  const Bytes train = records({{3, 17}, {19, 99}, {0, 0}}, 1);
  dl::test::write_plain(dir.file("train.bin"), train);
  dl::test::write_plain(dir.file("test.bin"), records({{4, 21}}, 2));
  dl::CifarSource fine{dir.file(""), true, false};
  CHECK(dl::read_cifar_split(fine, dl::CifarSplit::kTrain).labels ==
        std::vector<std::int32_t>{17, 99, 0});
  dl::CifarSource coarse = fine;
  coarse.coarse_labels = true;
  CHECK(dl::read_cifar_split(coarse, dl::CifarSplit::kTrain).labels ==
        std::vector<std::int32_t>{3, 19, 0});
  const dl::CifarRecords test = dl::read_cifar_split(fine, dl::CifarSplit::kTest);
  CHECK(test.pixels[0] == 2);
}

TEST_CASE("CIFAR: missing directory and batch files name the file and the fix", "[cifar]") {
  dl::test::TempDir dir;
  dl::CifarSource nowhere{dir.file("absent"), false, false};
  const std::string no_dir = read_error(nowhere, dl::CifarSplit::kTrain);
  CHECK_THAT(no_dir,
             Contains("absent") && Contains("is missing") && Contains("scripts/fetch_cifar10.sh"));

  write_cifar10(dir, {1, 1, 1, 1, 1}, 1);
  std::filesystem::remove(dir.file("data_batch_3.bin"));
  const std::string missing = read_error(source10(dir), dl::CifarSplit::kTrain);
  CHECK_THAT(missing, Contains("data_batch_3.bin: missing") &&
                          Contains("data_batch_1.bin to data_batch_5.bin and test_batch.bin"));

  // The unpacked archive's folder inside data.directory.
  dl::test::TempDir parent;
  std::filesystem::create_directory(parent.file("cifar-10-batches-bin"));
  for (const auto& name : {"data_batch_1.bin", "test_batch.bin"})
    dl::test::write_plain(parent.file(std::string("cifar-10-batches-bin/") + name),
                          records({{1}}, 0));
  CHECK_THAT(read_error(dl::CifarSource{parent.file(""), false, false}, dl::CifarSplit::kTest),
             Contains("set data.directory: ") && Contains("cifar-10-batches-bin"));
  // CIFAR-10 batches read as CIFAR-100.
  CHECK_THAT(read_error(dl::CifarSource{dir.file(""), true, false}, dl::CifarSplit::kTrain),
             Contains("train.bin: missing") && Contains("set data.format: cifar10"));
  // The archive, or a batch gzipped, not unpacked: said so, with the command.
  dl::test::TempDir packed;
  dl::test::write_plain(packed.file("cifar-10-binary.tar.gz"), Bytes{1, 2, 3});
  CHECK_THAT(read_error(dl::CifarSource{packed.file(""), false, false}, dl::CifarSplit::kTest),
             Contains("test_batch.bin: missing") &&
                 Contains("the folder holds the archive cifar-10-binary.tar.gz: unpack it (tar "
                          "xzf ") &&
                 Contains("cifar-10-batches-bin"));
  dl::test::write_plain(packed.file("test_batch.bin.gz"), Bytes{1, 2, 3});
  CHECK_THAT(read_error(dl::CifarSource{packed.file(""), false, false}, dl::CifarSplit::kTest),
             Contains("the folder holds test_batch.bin compressed: unpack it (gunzip "));
}

TEST_CASE("CIFAR: empty and cut files say where the data ends", "[cifar]") {
  dl::test::TempDir dir;
  write_cifar10(dir, {1, 1, 1, 1, 1}, 3);
  dl::test::write_plain(dir.file("data_batch_2.bin"), Bytes{});
  CHECK_THAT(read_error(source10(dir), dl::CifarSplit::kTrain),
             Contains("data_batch_2.bin: the file is empty") && Contains("3073 bytes"));

  Bytes cut = records({{1}, {2}, {3}}, 0);
  cut.resize(2 * 3073 + 100);
  dl::test::write_plain(dir.file("test_batch.bin"), cut);
  CHECK_THAT(read_error(source10(dir), dl::CifarSplit::kTest),
             Contains("test_batch.bin: truncated: 6246 bytes") &&
                 Contains("inside record 2 (counting from 0) after 100 of its 3073 bytes"));
}

TEST_CASE("CIFAR: a file of the other variant's records is recognised by its size", "[cifar]") {
  // Three CIFAR-10 records (3 x 3,073 bytes) read as CIFAR-100 (3,074-byte records): two whole
  // records whose label bytes happen to be in range, then the cut, and a hint at CIFAR-10.
  dl::test::TempDir dir;
  dl::test::write_plain(dir.file("test.bin"), records({{1}, {1}, {1}}, 0));
  CHECK_THAT(read_error(dl::CifarSource{dir.file(""), true, false}, dl::CifarSplit::kTest),
             Contains("truncated: 9219 bytes is not a whole number of 3074-byte CIFAR-100 "
                      "records") &&
                 Contains("inside record 2 (counting from 0) after 3071 of its 3074 bytes") &&
                 Contains("whole number of 3073-byte CIFAR-10 records") &&
                 Contains("set data.format: cifar10"));
}

TEST_CASE("CIFAR: a label out of range names the record, its byte and the variant", "[cifar]") {
  dl::test::TempDir dir;
  write_cifar10(dir, {1, 1, 1, 1, 1}, 1);
  dl::test::write_plain(dir.file("data_batch_4.bin"), records({{1}, {12}}, 0));
  CHECK_THAT(read_error(source10(dir), dl::CifarSplit::kTrain),
             Contains("data_batch_4.bin: record 1 (counting from 0, at byte 3073) has the label "
                      "12, but CIFAR-10 labels are 0 to 9") &&
                 Contains("data.format: cifar100"));
  dl::test::TempDir hundred;
  dl::test::write_plain(hundred.file("train.bin"), records({{1, 5}, {2, 100}}, 0));
  CHECK_THAT(read_error(dl::CifarSource{hundred.file(""), true, false}, dl::CifarSplit::kTrain),
             Contains("record 1") && Contains("fine label 100") && Contains("0 to 99"));
  dl::test::write_plain(hundred.file("train.bin"), records({{20, 5}}, 0));
  CHECK_THAT(read_error(dl::CifarSource{hundred.file(""), true, false}, dl::CifarSplit::kTrain),
             Contains("coarse label 20") && Contains("0 to 19"));
}

TEST_CASE("data sources: CIFAR as a 3-channel Dataset; predict's single-file input",
          "[cifar][dataset]") {
  dl::test::TempDir dir;
  write_cifar10(dir, {2, 1, 1, 1, 1}, 2);
  dl::Config config;
  dl::DataConfig& data = config.data;
  data.format = dl::DataFormat::kCifar10;
  data.directory = dir.file("");
  const dl::Dataset train = dl::load_training_set(config);
  CHECK(train.size() == 6);
  CHECK(train.channels() == 3);
  CHECK(train.shape_text() == "3x32x32");
  CHECK(train.sample_floats() == cifar::kImageBytes);
  // One gathered sample is the record's bytes / 255, plane after plane.
  const std::int64_t index = 1;
  std::vector<float> image(cifar::kImageBytes);
  std::int32_t label = -1;
  train.gather(&index, 1, image.data(), &label);
  CHECK(label == 1);
  CHECK(image[kPlane] == static_cast<float>(static_cast<std::uint8_t>(7 + kPlane)) / 255.0f);
  CHECK_THAT(dl::training_source(data), Contains("data_batch_*.bin"));
  CHECK(dl::load_images_file(dir.file("test_batch.bin"), dl::DataFormat::kCifar10, config).size() ==
        2);
}

// predict --input names the file straight: a folder got the IDX reader's advice ("not an IDX
// file; ... train-images-idx3-ubyte.gz") for a model that reads CIFAR batches.
TEST_CASE("CIFAR: a folder given as the batch file is named as not a CIFAR batch file",
          "[cifar][errors]") {
  dl::test::TempDir dir;
  const std::string folder = dir.file("");
  const dl::CifarSource ten{folder, false, false};
  const std::string message = data_error_message([&] { dl::read_cifar_file(folder, ten); });
  CHECK_THAT(message, Contains(folder + ": is a directory, not a CIFAR-10 batch file") &&
                          Contains("test_batch.bin"));
  CHECK_THAT(message, !Contains("IDX"));
  const dl::CifarSource hundred{folder, true, false};
  CHECK_THAT(data_error_message([&] { dl::read_cifar_file(folder, hundred); }),
             Contains("not a CIFAR-100 batch file") && Contains("test.bin"));
}
