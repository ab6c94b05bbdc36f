#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "error_capture.hpp"
#include "idx_test_files.hpp"

using Catch::Matchers::Contains;
using dl::test::Bytes;
using dl::test::data_error_message;

namespace {

constexpr std::uint32_t kRows = 2;
constexpr std::uint32_t kCols = 3;
constexpr std::size_t kImageBytes = kRows * kCols;
constexpr int kClasses = 10;

struct IdxPair {
  std::string images, labels;
};

IdxPair write_pair(const dl::test::TempDir& dir, const Bytes& pixels, const Bytes& labels,
                   const std::string& stem) {
  IdxPair pair{dir.file(stem + "-images-idx3-ubyte.gz"), dir.file(stem + "-labels-idx1-ubyte.gz")};
  const auto count = static_cast<std::uint32_t>(pixels.size() / kImageBytes);
  dl::test::write_gzip(pair.images, dl::test::idx_images(count, kRows, kCols, pixels));
  dl::test::write_gzip(pair.labels, dl::test::idx_labels(labels));
  return pair;
}

}  // namespace

TEST_CASE("Dataset loads IDX pairs and gathers floats in [0,1] as x/255", "[dataset]") {
  dl::test::TempDir dir;
  constexpr std::uint32_t kCount = 6;
  Bytes pixels = dl::test::pattern_bytes(kCount * kImageBytes, 5);
  pixels[0] = 0;
  pixels[1] = 255;
  const Bytes labels = dl::test::pattern_bytes(kCount, 6, kClasses);
  const IdxPair pair = write_pair(dir, pixels, labels, "train");

  const dl::Dataset data = dl::Dataset::load_idx(pair.images, pair.labels, kClasses);
  REQUIRE(data.size() == kCount);
  CHECK(data.rows() == static_cast<int>(kRows));
  CHECK(data.cols() == static_cast<int>(kCols));
  CHECK(data.num_classes() == kClasses);
  CHECK(data.sample_floats() == kImageBytes);

  const std::vector<std::int64_t> indices = {4, 0, 4, 1};
  std::vector<float> images(indices.size() * kImageBytes, -1.0f);
  std::vector<std::int32_t> got_labels(indices.size(), -1);
  data.gather(indices.data(), indices.size(), images.data(), got_labels.data());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const auto sample = static_cast<std::size_t>(indices[i]);
    CHECK(got_labels[i] == labels[sample]);
    for (std::size_t p = 0; p < kImageBytes; ++p) {
      CHECK(images[i * kImageBytes + p] ==
            static_cast<float>(pixels[sample * kImageBytes + p]) / 255.0f);
    }
  }
  CHECK(images[kImageBytes] == 0.0f);      // sample 0, pixel 0
  CHECK(images[kImageBytes + 1] == 1.0f);  // sample 0, pixel 1

  const dl::Dataset limited = dl::Dataset::load_idx(pair.images, pair.labels, kClasses, 4);
  CHECK(limited.size() == 4);
  CHECK(limited.labels() == std::vector<std::int32_t>(labels.begin(), labels.begin() + 4));
}

TEST_CASE("Dataset rejects image and label files with different counts", "[dataset][errors]") {
  dl::test::TempDir dir;
  const IdxPair six = write_pair(dir, dl::test::pattern_bytes(6 * kImageBytes, 1),
                                 dl::test::pattern_bytes(6, 2, kClasses), "six");
  const IdxPair four = write_pair(dir, dl::test::pattern_bytes(4 * kImageBytes, 1),
                                  dl::test::pattern_bytes(4, 2, kClasses), "four");
  // A limit smaller than both counts does not hide the mismatch.
  for (const std::int64_t limit : {0, 2}) {
    CHECK_THAT(data_error_message(
                   [&] { dl::Dataset::load_idx(six.images, four.labels, kClasses, limit); }),
               Contains(six.images) && Contains("6 images") && Contains(four.labels) &&
                   Contains("4 labels"));
  }
}

TEST_CASE("Dataset names the first label outside numClasses and advises the largest + 1",
          "[dataset][errors]") {
  dl::test::TempDir dir;
  const Bytes labels = {1, 2, 3, 12, 0, 13};
  const IdxPair pair = write_pair(dir, dl::test::pattern_bytes(6 * kImageBytes, 1), labels, "bad");
  // The advice covers label 13 too, so following it works (12 + 1 = 13 would fail again).
  CHECK_THAT(data_error_message([&] { dl::Dataset::load_idx(pair.images, pair.labels, kClasses); }),
             Contains(pair.labels) && Contains("label 12 at index 3") &&
                 Contains("numClasses = 10") &&
                 Contains("the largest label is 13; set data.numClasses to at least 14"));
  // Within the limit all labels are valid.
  CHECK(dl::Dataset::load_idx(pair.images, pair.labels, kClasses, 3).size() == 3);
  // With enough classes the file is fine.
  CHECK(dl::Dataset::load_idx(pair.images, pair.labels, 14).size() == 6);
}

TEST_CASE("Dataset from raw vectors checks its inputs", "[dataset][errors]") {
  CHECK_THAT(data_error_message([] {
               dl::Dataset(2, 2, Bytes(7), {0, 1}, 2);
             }),
             Contains("7 pixel bytes") && Contains("expected 8"));
  CHECK_THAT(data_error_message([] {
               dl::Dataset(1, 1, Bytes(2), {0, 5}, 3);
             }),
             Contains("label 5 at index 1"));
  CHECK_THAT(data_error_message([] {
               dl::Dataset(1, 1, Bytes(3), {3, 0, 7}, 3);
             }),
             Contains("label 3 at index 0") && Contains("set data.numClasses to at least 8"));
  CHECK_THAT(data_error_message([] { dl::Dataset(0, 1, Bytes(), {}, 3); }), Contains("0x1"));
  const dl::Dataset empty(1, 1, Bytes(), {}, 3);
  CHECK(empty.size() == 0);
}

TEST_CASE("Dataset gather rejects an index out of range", "[dataset][errors]") {
  const dl::Dataset data(1, 2, Bytes{1, 2, 3, 4}, {0, 1}, 2);
  std::vector<float> images(4);
  std::vector<std::int32_t> labels(2);
  const std::vector<std::int64_t> indices = {1, 2};
  CHECK_THAT(
      data_error_message([&] { data.gather(indices.data(), 2, images.data(), labels.data()); }),
      Contains("sample index 2") && Contains("[0, 2)"));
  const std::vector<std::int64_t> negative = {-1};
  CHECK_THAT(
      data_error_message([&] { data.gather(negative.data(), 1, images.data(), labels.data()); }),
      Contains("sample index -1"));
}
