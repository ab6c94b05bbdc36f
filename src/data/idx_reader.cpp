#include "data/idx_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.hpp"
#include "data/gz_input.hpp"

namespace dl {
namespace {

constexpr std::size_t kFieldBytes = 4;  // the magic and each dimension size are 32-bit
constexpr std::uint8_t kUnsignedByteDtype = 0x08;
constexpr int kImageDimensions = 3;
constexpr int kLabelDimensions = 1;
// Data is read in chunks of this size so that memory follows the bytes actually present, not
// the size a (possibly lying) header claims.
constexpr std::size_t kReadChunkBytes = std::size_t{1} << 20;
// Up to this much is reserved from the header at once (after the header checks), so a normal
// data set is read without reallocation while a truncated giant claim costs little.
constexpr std::uint64_t kMaxUpfrontReserveBytes = std::uint64_t{1} << 26;
constexpr std::size_t kTrailingProbeBytes = std::size_t{1} << 16;
constexpr int kGiBShift = 30;
constexpr std::uint8_t kGzipMagic0 = 0x1f;
constexpr std::uint8_t kGzipMagic1 = 0x8b;

const char* kind_noun(IdxKind kind) {
  return kind == IdxKind::kImages ? "images" : "labels";
}
const char* kind_item(IdxKind kind) {
  return kind == IdxKind::kImages ? "image" : "label";
}
std::uint32_t expected_magic(IdxKind kind) {
  return kind == IdxKind::kImages ? kIdxImagesMagic : kIdxLabelsMagic;
}
int expected_dimensions(IdxKind kind) {
  return kind == IdxKind::kImages ? kImageDimensions : kLabelDimensions;
}
std::size_t header_bytes(IdxKind kind) {
  return kFieldBytes * (1 + static_cast<std::size_t>(expected_dimensions(kind)));
}
const char* file_pattern(IdxKind kind) {
  return kind == IdxKind::kImages ? "*-images-idx3-ubyte[.gz]" : "*-labels-idx1-ubyte[.gz]";
}

std::uint32_t big_endian32(const std::uint8_t* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

const char* dtype_name(std::uint8_t dtype) {
  switch (dtype) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

[[noreturn]] void throw_header_cut(const GzInput& in, IdxKind kind, std::size_t got) {
  if (got == 0) {
    throw DataError(
        fmt::format("{}: the file is empty (0 bytes); expected an IDX {} file "
                    "({}); {}",
                    in.path(), kind_noun(kind), file_pattern(kind), in.damaged_fix()));
  }
  throw DataError(
      fmt::format("{}: the file ends inside the IDX header after {} of {} bytes; the "
                  "file is truncated: {}",
                  in.path(), got, header_bytes(kind), in.damaged_fix()));
}

void check_magic(const GzInput& in, IdxKind kind, const std::uint8_t* m) {
  const std::uint32_t magic = big_endian32(m);
  const std::uint32_t want = expected_magic(kind);
  if (m[0] != 0 || m[1] != 0) {
    if (in.compressed() && m[0] == kGzipMagic0 && m[1] == kGzipMagic1) {
      throw DataError(
          fmt::format("{}: the file is gzip-compressed twice (after decompression it "
                      "starts with the gzip magic 1f 8b again); decompress it once "
                      "with gunzip",
                      in.path()));
    }
    throw DataError(fmt::format(
        "{}: not an IDX file: it starts with the bytes {:02x} {:02x} "
        "{:02x} {:02x} (magic 0x{:08x}) but an IDX {} file starts with "
        "0x{:08x}; check that the path names the {} file",
        in.path(), m[0], m[1], m[2], m[3], magic, kind_noun(kind), want, file_pattern(kind)));
  }
  if (m[2] != kUnsignedByteDtype) {
    throw DataError(
        fmt::format("{}: wrong IDX data type byte 0x{:02x} ({}) in magic 0x{:08x}; "
                    "expected 0x{:02x} ({}), magic 0x{:08x}: only unsigned-byte IDX "
                    "files (MNIST-style) are supported",
                    in.path(), m[2], dtype_name(m[2]), magic, kUnsignedByteDtype,
                    dtype_name(kUnsignedByteDtype), want));
  }
  const int dimensions = m[3];
  if (dimensions == expected_dimensions(kind)) return;
  const IdxKind other = kind == IdxKind::kImages ? IdxKind::kLabels : IdxKind::kImages;
  if (dimensions == expected_dimensions(other)) {
    throw DataError(
        fmt::format("{}: magic 0x{:08x} marks an IDX {} file, but an IDX {} file "
                    "(magic 0x{:08x}) was expected; were the images and labels paths "
                    "swapped? This path must name the {} file",
                    in.path(), magic, kind_noun(other), kind_noun(kind), want, file_pattern(kind)));
  }
  throw DataError(
      fmt::format("{}: magic 0x{:08x} declares {} dimensions, but IDX {} have {} "
                  "(magic 0x{:08x}); check that the path names the {} file",
                  in.path(), magic, dimensions, kind_noun(kind), expected_dimensions(kind), want,
                  file_pattern(kind)));
}

IdxHeader parse_header(GzInput& in, IdxKind kind) {
  std::array<std::uint8_t, kFieldBytes*(1 + kImageDimensions)> raw{};
  std::size_t got = in.read(raw.data(), kFieldBytes);
  if (got < kFieldBytes) throw_header_cut(in, kind, got);
  check_magic(in, kind, raw.data());
  const std::size_t total = header_bytes(kind);
  got += in.read(raw.data() + kFieldBytes, total - kFieldBytes);
  if (got < total) throw_header_cut(in, kind, got);

  IdxHeader header;
  header.kind = kind;
  header.compressed = in.compressed();
  const std::uint32_t count = big_endian32(raw.data() + kFieldBytes);
  if (count == 0) {
    throw DataError(
        fmt::format("{}: the header declares 0 {}: the file holds no data; use a "
                    "file with at least one item",
                    in.path(), kind_noun(kind)));
  }
  header.count = count;
  std::uint64_t item_bytes = 1;
  if (kind == IdxKind::kImages) {
    const std::uint32_t rows = big_endian32(raw.data() + 2 * kFieldBytes);
    const std::uint32_t cols = big_endian32(raw.data() + 3 * kFieldBytes);
    if (rows == 0 || cols == 0 || rows > kMaxIdxImageSide || cols > kMaxIdxImageSide) {
      throw DataError(
          fmt::format("{}: the header declares images of {}x{} pixels; each side "
                      "must be between 1 and {}: the header is corrupt: {}",
                      in.path(), rows, cols, kMaxIdxImageSide, in.damaged_fix()));
    }
    header.rows = static_cast<int>(rows);
    header.cols = static_cast<int>(cols);
    item_bytes = std::uint64_t{rows} * cols;
  }
  // Compare by division so that the product itself cannot overflow.
  if (item_bytes > kMaxIdxPayloadBytes / std::uint64_t{count}) {
    const std::string shape = kind == IdxKind::kImages
                                  ? fmt::format(" of {}x{} pixels", header.rows, header.cols)
                                  : std::string();
    throw DataError(
        fmt::format("{}: the header declares {} {}{} ({} bytes each), more than the "
                    "limit of {} bytes ({} GiB) of data; the header is corrupt: {}",
                    in.path(), count, kind_noun(kind), shape, item_bytes, kMaxIdxPayloadBytes,
                    kMaxIdxPayloadBytes >> kGiBShift, in.damaged_fix()));
  }
  return header;
}

std::uint64_t item_bytes(const IdxHeader& h) {
  return h.kind == IdxKind::kImages ? std::uint64_t(h.rows) * std::uint64_t(h.cols) : 1;
}

[[noreturn]] void throw_truncated(const GzInput& in, const IdxHeader& h, std::uint64_t found) {
  const std::uint64_t per_item = item_bytes(h);
  const std::uint64_t expected = std::uint64_t(h.count) * per_item;
  const std::string cut_note =
      in.stream_cut_off() ? " (the gzip stream itself is cut off before its end)" : "";
  const std::string shape =
      h.kind == IdxKind::kImages ? fmt::format(" of {}x{}", h.rows, h.cols) : std::string();
  if (found == 0) {
    throw DataError(
        fmt::format("{}: the file holds only its {}-byte header: none of the {} {}{} "
                    "it declares ({} bytes) follow{}; the file is truncated: {}",
                    in.path(), header_bytes(h.kind), h.count, kind_noun(h.kind), shape, expected,
                    cut_note, in.damaged_fix()));
  }
  const std::uint64_t item = found / per_item;
  const char* where = found % per_item == 0 ? "just before" : "inside";
  throw DataError(
      fmt::format("{}: truncated: the header declares {} {}{} ({} bytes after the "
                  "{}-byte header) but only {} bytes follow; the data ends {} {} "
                  "{} (counting from 0){}; {}",
                  in.path(), h.count, kind_noun(h.kind), shape, expected, header_bytes(h.kind),
                  found, where, kind_item(h.kind), item, cut_note, in.damaged_fix()));
}

// Reads the first `items` items; memory grows with the bytes that actually arrive.
std::vector<std::uint8_t> read_payload(GzInput& in, const IdxHeader& h, std::int64_t items) {
  const std::uint64_t want = std::uint64_t(items) * item_bytes(h);
  std::vector<std::uint8_t> out;
  out.reserve(static_cast<std::size_t>(std::min(want, kMaxUpfrontReserveBytes)));
  std::uint64_t done = 0;
  while (done < want) {
    const auto chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(want - done, kReadChunkBytes));
    out.resize(static_cast<std::size_t>(done) + chunk);
    const std::size_t got = in.read(out.data() + done, chunk);
    done += got;
    if (got < chunk) throw_truncated(in, h, done);
  }
  return out;
}

// Called after all declared items were read: anything left is an error (see idx_reader.hpp).
void check_no_trailing_bytes(GzInput& in, const IdxHeader& h) {
  std::vector<std::uint8_t> probe(kTrailingProbeBytes);
  std::uint64_t extra = 0;
  for (;;) {
    const std::size_t got = in.read(probe.data(), probe.size());
    if (got == 0) break;
    extra += got;
  }
  // Every item is there, but the stream stops before its trailer, whose checksum tells whether
  // the items are the ones written: the file was cut off in its last bytes (it was accepted).
  if (in.stream_cut_off())
    throw DataError(fmt::format(
        "{}: the gzip stream ends before its trailer (the checksum of the {} {}): the file was "
        "cut off; {}",
        in.path(), h.count, kind_noun(h.kind), in.damaged_fix()));
  if (extra == 0) return;
  throw DataError(
      fmt::format("{}: {} unexpected byte(s) follow the {} {} the header declares; the "
                  "header and the data disagree (a damaged or concatenated file): {}",
                  in.path(), extra, h.count, kind_noun(h.kind), in.damaged_fix()));
}

std::int64_t items_to_read(const IdxHeader& h, std::int64_t limit) {
  DL_CHECK(limit >= 0, "an IDX read limit must be >= 0 (0 = all items)");
  return limit > 0 ? std::min(limit, h.count) : h.count;
}

// The IDX reader's files; the example is MNIST's, whose names every IDX data set copies.
const ExpectedFile kExpectedIdx{"an IDX file", "train-images-idx3-ubyte.gz"};

std::vector<std::uint8_t> read_items(GzInput& in, const IdxHeader& h, std::int64_t limit) {
  const std::int64_t items = items_to_read(h, limit);
  std::vector<std::uint8_t> data = read_payload(in, h, items);
  if (items == h.count) check_no_trailing_bytes(in, h);
  return data;
}

}  // namespace

IdxHeader read_idx_header(const std::string& path, IdxKind kind) {
  GzInput in(path, kExpectedIdx);
  return parse_header(in, kind);
}

IdxImages read_idx_images(const std::string& path, std::int64_t limit) {
  GzInput in(path, kExpectedIdx);
  const IdxHeader h = parse_header(in, IdxKind::kImages);
  IdxImages images;
  images.count = items_to_read(h, limit);
  images.rows = h.rows;
  images.cols = h.cols;
  images.pixels = read_items(in, h, limit);
  return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path, std::int64_t limit) {
  GzInput in(path, kExpectedIdx);
  const IdxHeader h = parse_header(in, IdxKind::kLabels);
  return read_items(in, h, limit);
}

}  // namespace dl
