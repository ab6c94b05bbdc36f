#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "allocation_probe.hpp"
#include "data/idx_reader.hpp"
#include "error_capture.hpp"
#include "idx_test_files.hpp"

using Catch::Matchers::Contains;
using dl::test::Bytes;
using dl::test::data_error_message;

namespace {

constexpr std::uint32_t kCount = 7;
constexpr std::uint32_t kRows = 3;
constexpr std::uint32_t kCols = 5;
constexpr std::size_t kImageBytes = kRows * kCols;
constexpr std::uint32_t kClasses = 10;

Bytes some_pixels() {
  return dl::test::pattern_bytes(kCount * kImageBytes, 1);
}
Bytes some_labels() {
  return dl::test::pattern_bytes(kCount, 2, kClasses);
}

}  // namespace

TEST_CASE("IDX images and labels read back what was written, plain and gzip", "[idx]") {
  dl::test::TempDir dir;
  const Bytes pixels = some_pixels();
  const Bytes labels = some_labels();
  // Compression is recognised by content: give the gzip file no .gz and the plain one a .gz.
  const std::string plain_images = dir.file("plain-images.gz");
  const std::string gzip_images = dir.file("gzip-images");
  const std::string plain_labels = dir.file("plain-labels.gz");
  const std::string gzip_labels = dir.file("gzip-labels");
  dl::test::write_plain(plain_images, dl::test::idx_images(kCount, kRows, kCols, pixels));
  dl::test::write_gzip(gzip_images, dl::test::idx_images(kCount, kRows, kCols, pixels));
  dl::test::write_plain(plain_labels, dl::test::idx_labels(labels));
  dl::test::write_gzip(gzip_labels, dl::test::idx_labels(labels));

  for (const std::string& path : {plain_images, gzip_images}) {
    const dl::IdxImages images = dl::read_idx_images(path);
    CHECK(images.count == kCount);
    CHECK(images.rows == static_cast<int>(kRows));
    CHECK(images.cols == static_cast<int>(kCols));
    CHECK(images.pixels == pixels);
  }
  CHECK(dl::read_idx_labels(plain_labels) == labels);
  CHECK(dl::read_idx_labels(gzip_labels) == labels);

  const dl::IdxHeader plain_header = dl::read_idx_header(plain_images, dl::IdxKind::kImages);
  const dl::IdxHeader gzip_header = dl::read_idx_header(gzip_images, dl::IdxKind::kImages);
  CHECK_FALSE(plain_header.compressed);
  CHECK(gzip_header.compressed);
  CHECK(gzip_header.count == kCount);
  CHECK(dl::read_idx_header(gzip_labels, dl::IdxKind::kLabels).count == kCount);
}

TEST_CASE("IDX limit reads only the first items", "[idx]") {
  dl::test::TempDir dir;
  const Bytes pixels = some_pixels();
  const Bytes labels = some_labels();
  const std::string images_path = dir.file("images.gz");
  const std::string labels_path = dir.file("labels.gz");
  dl::test::write_gzip(images_path, dl::test::idx_images(kCount, kRows, kCols, pixels));
  dl::test::write_gzip(labels_path, dl::test::idx_labels(labels));

  constexpr std::int64_t kLimit = 3;
  const dl::IdxImages first = dl::read_idx_images(images_path, kLimit);
  CHECK(first.count == kLimit);
  CHECK(first.pixels == Bytes(pixels.begin(), pixels.begin() + kLimit * kImageBytes));
  CHECK(dl::read_idx_labels(labels_path, kLimit) == Bytes(labels.begin(), labels.begin() + kLimit));

  const dl::IdxImages all = dl::read_idx_images(images_path, kCount + 100);
  CHECK(all.count == kCount);
  CHECK(all.pixels == pixels);
}

TEST_CASE("IDX reader names a missing file and the system's reason", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string path = dir.file("does-not-exist-idx3-ubyte.gz");
  const std::string message = data_error_message([&] { dl::read_idx_images(path); });
  CHECK_THAT(message, Contains(path) && Contains("No such file or directory"));
  const std::string folder = dir.file("");
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(folder); }),
             Contains(folder + ": is a directory, not an IDX file") &&
                 Contains("train-images-idx3-ubyte.gz"));
}

TEST_CASE("IDX reader rejects an empty file and a cut header", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string empty = dir.file("empty");
  dl::test::write_plain(empty, {});
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(empty); }),
             Contains(empty) && Contains("empty (0 bytes)"));
  const std::string empty_gz = dir.file("empty.gz");
  dl::test::write_gzip(empty_gz, {});
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(empty_gz); }),
             Contains(empty_gz) && Contains("empty (0 bytes)"));

  const std::string cut = dir.file("cut");
  Bytes header = dl::test::idx_images(kCount, kRows, kCols, {});
  header.resize(10);
  dl::test::write_plain(cut, header);
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(cut); }),
             Contains(cut) && Contains("after 10 of 16 bytes"));
}

TEST_CASE("a damaged IDX file's fix fits whose file it is", "[idx][errors]") {
  // The download scripts mend a published data set's file, not a user's own.
  dl::test::TempDir dir;
  Bytes cut = dl::test::idx_images(kCount, kRows, kCols, some_pixels());
  cut.resize(cut.size() - 1);
  const std::string published = dir.file("t10k-images-idx3-ubyte");
  const std::string own = dir.file("scans-idx3-ubyte");
  dl::test::write_plain(published, cut);
  dl::test::write_plain(own, cut);
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(published); }),
             Contains("; download the file again (scripts/get_data.sh)"));
  const std::string own_message = data_error_message([&] { dl::read_idx_images(own); });
  CHECK_THAT(own_message, Contains("; write it again with the program that made it"));
  CHECK_THAT(own_message, !Contains("get_data.sh"));
  const std::string own_empty = dir.file("scans.gz");
  dl::test::write_gzip(own_empty, {});
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(own_empty); }),
             Contains("empty (0 bytes)") && !Contains("get_data.sh"));
}

TEST_CASE("IDX reader reports a wrong magic with what it found and expected", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string html = dir.file("html.gz");
  const std::string page = "<!DOCTYPE html><html>Not Found</html>";
  dl::test::write_plain(html, Bytes(page.begin(), page.end()));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(html); }),
             Contains(html) && Contains("0x3c21444f") && Contains("0x00000803"));
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(html); }),
             Contains(html) && Contains("0x3c21444f") && Contains("0x00000801"));
}

TEST_CASE("IDX reader recognises swapped images and labels", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte");
  const std::string labels = dir.file("train-labels-idx1-ubyte");
  dl::test::write_plain(images, dl::test::idx_images(kCount, kRows, kCols, some_pixels()));
  dl::test::write_plain(labels, dl::test::idx_labels(some_labels()));
  CHECK_THAT(
      data_error_message([&] { dl::read_idx_images(labels); }),
      Contains(labels) && Contains("0x00000801") && Contains("0x00000803") && Contains("swapped"));
  CHECK_THAT(
      data_error_message([&] { dl::read_idx_labels(images); }),
      Contains(images) && Contains("0x00000803") && Contains("0x00000801") && Contains("swapped"));
}

TEST_CASE("IDX reader rejects a wrong dtype and a wrong dimension count", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string floats = dir.file("floats");
  dl::test::write_plain(floats, dl::test::idx_bytes(0x00000D03, {1, 1, 1}, {0, 0, 0, 0}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(floats); }),
             Contains(floats) && Contains("0x0d") && Contains("float32") && Contains("0x00000803"));

  const std::string two_dims = dir.file("two-dims");
  dl::test::write_plain(two_dims, dl::test::idx_bytes(0x00000802, {2, 2}, {1, 2, 3, 4}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(two_dims); }),
             Contains(two_dims) && Contains("2 dimensions") && Contains("0x00000803"));
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(two_dims); }),
             Contains(two_dims) && Contains("2 dimensions") && Contains("0x00000801"));
}

TEST_CASE("IDX reader rejects zero sizes", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string no_images = dir.file("no-images");
  dl::test::write_plain(no_images, dl::test::idx_images(0, kRows, kCols, {}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(no_images); }),
             Contains(no_images) && Contains("declares 0 images"));

  const std::string no_labels = dir.file("no-labels");
  dl::test::write_plain(no_labels, dl::test::idx_labels({}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(no_labels); }),
             Contains(no_labels) && Contains("declares 0 labels"));

  const std::string no_rows = dir.file("no-rows");
  dl::test::write_plain(no_rows, dl::test::idx_images(kCount, 0, kCols, {}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(no_rows); }),
             Contains(no_rows) && Contains("0x5 pixels"));
}

TEST_CASE("IDX reader refuses absurd sizes before allocating", "[idx][errors]") {
  dl::test::TempDir dir;
  constexpr std::uint32_t kHuge = 1u << 31;
  constexpr std::size_t kSmallAllocation = 1u << 20;

  const std::string giant_sides = dir.file("giant-sides");
  dl::test::write_plain(giant_sides, dl::test::idx_images(kHuge, kHuge, kHuge, {}));
  dl::test::reset_largest_allocation();
  const std::string sides_message = data_error_message([&] { dl::read_idx_images(giant_sides); });
  CHECK(dl::test::largest_allocation() < kSmallAllocation);
  CHECK_THAT(sides_message, Contains(giant_sides) && Contains("2147483648x2147483648"));

  // Sides within the per-side limit, but their product with the count overflows 2^34.
  constexpr std::uint32_t kSide = 1u << 16;
  const std::string giant_total = dir.file("giant-total");
  dl::test::write_plain(giant_total, dl::test::idx_images(kHuge, kSide, kSide, {}));
  dl::test::reset_largest_allocation();
  const std::string total_message = data_error_message([&] { dl::read_idx_images(giant_total); });
  CHECK(dl::test::largest_allocation() < kSmallAllocation);
  CHECK_THAT(total_message, Contains(giant_total) && Contains("2147483648 images of 65536x65536") &&
                                Contains(std::to_string(dl::kMaxIdxPayloadBytes)));

  const std::string giant_labels = dir.file("giant-labels");
  dl::test::write_plain(giant_labels, dl::test::idx_bytes(0x00000801, {0xFFFFFFFFu}, {}));
  // 2^32 - 1 one-byte labels stay below the payload limit: the header passes, but memory
  // follows the data that arrives, not the 4 GiB the header claims.
  dl::test::reset_largest_allocation();
  const std::string labels_message = data_error_message([&] { dl::read_idx_labels(giant_labels); });
  CHECK(dl::test::largest_allocation() < 0xFFFFFFFFu);
  CHECK_THAT(labels_message, Contains(giant_labels) && Contains("only its 8-byte header"));
}

TEST_CASE("IDX reader reports truncated data with bytes and item index", "[idx][errors]") {
  dl::test::TempDir dir;
  const Bytes pixels = some_pixels();
  // 3 full images (45 bytes) and 4 bytes of the fourth.
  constexpr std::size_t kKept = 3 * kImageBytes + 4;
  const Bytes cut =
      dl::test::idx_images(kCount, kRows, kCols, Bytes(pixels.begin(), pixels.begin() + kKept));
  const std::string plain = dir.file("cut-images");
  const std::string gz = dir.file("cut-images.gz");
  dl::test::write_plain(plain, cut);
  dl::test::write_gzip(gz, cut);
  for (const std::string& path : {plain, gz}) {
    CHECK_THAT(data_error_message([&] { dl::read_idx_images(path); }),
               Contains(path) && Contains(std::to_string(kCount * kImageBytes) + " bytes") &&
                   Contains("only " + std::to_string(kKept) + " bytes follow") &&
                   Contains("inside image 3"));
  }
  // A limit inside the data that is present reads fine.
  CHECK(dl::read_idx_images(plain, 3).pixels == Bytes(pixels.begin(), pixels.begin() + 45));

  const std::string labels = dir.file("cut-labels");
  dl::test::write_plain(labels, dl::test::idx_bytes(0x00000801, {kCount}, {1, 2}));
  CHECK_THAT(
      data_error_message([&] { dl::read_idx_labels(labels); }),
      Contains(labels) && Contains("only 2 bytes follow") && Contains("just before label 2"));
}

TEST_CASE("IDX reader reports a file that holds only its header", "[idx][errors]") {
  dl::test::TempDir dir;
  const std::string path = dir.file("header-only.gz");
  dl::test::write_gzip(path, dl::test::idx_images(kCount, kRows, kCols, {}));
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(path); }),
             Contains(path) && Contains("only its 16-byte header") &&
                 Contains(std::to_string(kCount) + " images"));
}

TEST_CASE("IDX reader rejects trailing bytes unless a limit stops it early", "[idx][errors]") {
  dl::test::TempDir dir;
  Bytes padded = dl::test::idx_labels(some_labels());
  padded.insert(padded.end(), {9, 9, 9});
  const std::string path = dir.file("padded-labels");
  dl::test::write_plain(path, padded);
  CHECK_THAT(data_error_message([&] { dl::read_idx_labels(path); }),
             Contains(path) && Contains("3 unexpected byte(s)") &&
                 Contains(std::to_string(kCount) + " labels"));
  CHECK(dl::read_idx_labels(path, kCount - 1).size() == kCount - 1);
}

TEST_CASE("IDX reader refuses a gzip file cut in its trailer, every item there", "[idx][errors]") {
  dl::test::TempDir dir;
  const Bytes gz = dl::test::gzip_bytes(dl::test::idx_labels(some_labels()));
  constexpr std::size_t kTrailerBytes = 8;  // CRC-32 and length: what tells the data is whole
  for (const std::size_t cut : {kTrailerBytes, std::size_t{3}}) {
    INFO("cut " << cut);
    const std::string path = dir.file("cut-trailer-" + std::to_string(cut) + ".gz");
    dl::test::write_plain(path, Bytes(gz.begin(), gz.end() - static_cast<long>(cut)));
    CHECK_THAT(data_error_message([&] { dl::read_idx_labels(path); }),
               Contains(path) && Contains("the gzip stream ends before its trailer") &&
                   Contains("the file was cut off"));
    // A limit that stops early reads no further, as for trailing bytes.
    CHECK(dl::read_idx_labels(path, kCount - 1).size() == kCount - 1);
  }
}

TEST_CASE("IDX reader passes on zlib's message for corrupt gzip data", "[idx][errors]") {
  dl::test::TempDir dir;
  const Bytes valid = dl::test::idx_images(kCount, kRows, kCols, some_pixels());
  const Bytes gz = dl::test::gzip_bytes(valid);
  constexpr std::size_t kGzipHeaderBytes = 10;

  // A valid gzip header followed by garbage where the deflate stream should be.
  Bytes garbage(gz.begin(), gz.begin() + kGzipHeaderBytes);
  const Bytes noise = dl::test::pattern_bytes(200, 3);
  garbage.insert(garbage.end(), noise.begin(), noise.end());
  // The first deflate byte decides the block type: 0x07 sets BTYPE = 11, which deflate reserves.
  garbage[kGzipHeaderBytes] = 0x07;
  const std::string garbage_path = dir.file("garbage.gz");
  dl::test::write_plain(garbage_path, garbage);
  CHECK_THAT(
      data_error_message([&] { dl::read_idx_images(garbage_path); }),
      Contains(garbage_path) && Contains("corrupt gzip") && Contains("zlib: invalid block type"));

  // A damaged CRC in the gzip trailer (the 8 bytes after the deflate stream).
  Bytes bad_crc = gz;
  constexpr std::size_t kTrailerBytes = 8;
  bad_crc[bad_crc.size() - kTrailerBytes] ^= 0xFF;
  const std::string crc_path = dir.file("bad-crc.gz");
  dl::test::write_plain(crc_path, bad_crc);
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(crc_path); }),
             Contains(crc_path) && Contains("zlib: incorrect data check"));
  // The failing read handed out none of its bytes: no count of them is made up.
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(crc_path); }),
             !Contains("after 0 decompressed bytes"));

  // A gzip stream cut in the middle: the decompressed data is truncated too.
  Bytes half(gz.begin(), gz.begin() + gz.size() / 2);
  const std::string half_path = dir.file("half.gz");
  dl::test::write_plain(half_path, half);
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(half_path); }),
             Contains(half_path) && Contains("gzip stream itself is cut off"));

  // Compressed twice: the decompressed bytes start with the gzip magic again.
  const std::string twice = dir.file("twice.gz");
  dl::test::write_gzip(twice, gz);
  CHECK_THAT(data_error_message([&] { dl::read_idx_images(twice); }),
             Contains(twice) && Contains("compressed twice"));
}
