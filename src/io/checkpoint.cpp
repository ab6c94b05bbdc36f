#include "io/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <new>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/byte_codec.hpp"
#include "io/file_access.hpp"
#include "io/network_signature.hpp"
#include "io/section_buffer.hpp"

namespace dl {

namespace {

constexpr std::array<unsigned char, 8> kMagic = {'D', 'L', 'T', 'R', 'A', 'I', 'N', '\0'};
// magic, format version, section count, header CRC
constexpr std::size_t kFileHeaderBytes = kMagic.size() + 3 * sizeof(std::uint32_t);
constexpr std::size_t kTagBytes = 4;
// tag, payload length, CRC
constexpr std::size_t kSectionHeaderBytes =
    kTagBytes + sizeof(std::uint64_t) + sizeof(std::uint32_t);
// Far above the count of any format version; bounds the work done on a corrupt count.
constexpr std::uint32_t kMaxSectionCount = 64;

enum Section : std::size_t { kMeta, kParameters, kUpdater, kRng, kSectionCount };
constexpr std::array<const char*, kSectionCount> kSectionTags = {"META", "PARM", "UPDT", "RNGC"};

constexpr const char* kDamagedAdvice = "the file is damaged: resume from an older checkpoint";

// zlib returns 0 for a null buffer instead of the running CRC, and an empty vector's data() may
// be null: an empty piece must leave the CRC as it is.
std::uint32_t crc_update(std::uint32_t crc, const void* data, std::size_t size) {
  if (size == 0) return crc;
  return static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

bool is_valid_kind(const std::string& kind) {
  return kind == kCheckpointKind || kind == kModelKind;
}

// One section ready to write: small encoded parts are owned here, large float arrays are
// referenced where they are. A deque keeps each owned string (and its bytes) in place.
class SectionBuilder {
 public:
  explicit SectionBuilder(const char* tag) : tag_(tag) {}
  SectionBuilder(const SectionBuilder&) = delete;
  SectionBuilder& operator=(const SectionBuilder&) = delete;

  void add_encoded(const std::string& bytes) {
    owned_.push_back(bytes);
    pieces_.push_back({owned_.back().data(), owned_.back().size()});
  }
  void add_view(const void* data, std::size_t size) { pieces_.push_back({data, size}); }

  // Appends the section header (tag, length, CRC) and the payload pieces to `out`.
  void emit(std::vector<ByteSpan>* out) {
    std::uint64_t length = 0;
    for (const ByteSpan& piece : pieces_) length += piece.size;
    ByteWriter header;
    header.raw(tag_, kTagBytes);
    header.u64(length);
    std::uint32_t crc = crc_update(0, header.bytes().data(), header.bytes().size());
    for (const ByteSpan& piece : pieces_) crc = crc_update(crc, piece.data, piece.size);
    header.u32(crc);
    owned_.push_back(header.bytes());
    out->push_back({owned_.back().data(), owned_.back().size()});
    out->insert(out->end(), pieces_.begin(), pieces_.end());
  }

 private:
  const char* tag_;
  std::deque<std::string> owned_;
  std::vector<ByteSpan> pieces_;
};

std::string encode_meta(const CheckpointState& state) {
  ByteWriter w;
  w.str(state.kind);
  w.u64(state.config_hash);
  w.str(state.network_signature);
  w.i64(state.epoch);
  w.i64(state.round_in_epoch);
  w.i64(state.iteration);
  w.u64(state.metadata.size());
  for (const auto& [key, value] : state.metadata) {
    w.str(key);
    w.str(value);
  }
  return w.bytes();
}

std::string encode_u64(std::uint64_t v) {
  ByteWriter w;
  w.u64(v);
  return w.bytes();
}

// A tag as text for messages, with bytes that are not printable shown as \xNN.
std::string printable_tag(const unsigned char* tag) {
  std::string text;
  for (std::size_t i = 0; i < kTagBytes; ++i) {
    if (std::isprint(tag[i]) != 0 && tag[i] != '\\') {
      text.push_back(static_cast<char>(tag[i]));
    } else {
      text += fmt::format("\\x{:02x}", tag[i]);
    }
  }
  return text;
}

// The open file being read, with its size known up front so that no length read from it is
// trusted beyond the bytes actually there.
class InputFile {
 public:
  // Regular files only: a FIFO or a device given as --model is refused, never read.
  explicit InputFile(const std::string& path)
      : path_(path), input_(path, InputRole::kCheckpoint), fd_(input_.fd()), size_(input_.size()) {}
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }
  std::uint64_t allocated_bytes() const { return input_.allocated_bytes(); }
  std::uint64_t remaining() const { return size_ - offset_; }

  // Reads exactly n bytes; the caller has checked that n <= remaining().
  void read(void* dst, std::size_t n, const std::string& what) {
    char* p = static_cast<char*>(dst);
    std::size_t left = n;
    while (left > 0) {
      const ssize_t got = ::read(fd_, p, left);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw CheckpointError(fmt::format(
            "{}: reading {} failed: {}; check the file and the disk holding it", path_, what,
            got < 0 ? std::strerror(errno) : "the file became shorter while being read"));
      }
      p += got;
      left -= static_cast<std::size_t>(got);
    }
    offset_ += n;
  }

 private:
  std::string path_;
  InputFd input_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t offset_ = 0;
};

void check_file_header(InputFile& file, const std::string& path, std::uint32_t* section_count) {
  if (file.size() == 0) {
    throw CheckpointError(fmt::format(
        "{}: the file is empty; it was truncated or is not a dl-train checkpoint: resume from "
        "an older checkpoint",
        path));
  }
  std::array<unsigned char, kFileHeaderBytes> header{};
  const std::size_t available =
      static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), kFileHeaderBytes));
  file.read(header.data(), available, "the file header");
  const std::size_t magic_available = std::min(available, kMagic.size());
  if (std::memcmp(header.data(), kMagic.data(), magic_available) != 0) {
    throw CheckpointError(fmt::format(
        "{}: not a dl-train checkpoint or model file (it does not start with \"DLTRAIN\"); check "
        "the path",
        path));
  }
  if (available < kFileHeaderBytes) {
    throw CheckpointError(
        fmt::format("{}: truncated in the file header: expected {} bytes, found {}; {}", path,
                    kFileHeaderBytes, available, kDamagedAdvice));
  }
  const unsigned char* fields = header.data() + kMagic.size();
  const std::uint32_t version = load_u32_le(fields);
  if (version != kCheckpointFormatVersion) {
    throw CheckpointError(
        fmt::format("{}: unsupported format version {} (this dl-train reads version {}); {}", path,
                    version, kCheckpointFormatVersion,
                    version > kCheckpointFormatVersion
                        ? "it was written by a newer dl-train: read it with that version"
                        : "the file is damaged or was written by an incompatible dl-train"));
  }
  const std::size_t checked_bytes = kFileHeaderBytes - sizeof(std::uint32_t);
  const std::uint32_t stored_crc = load_u32_le(header.data() + checked_bytes);
  if (crc_update(0, header.data(), checked_bytes) != stored_crc) {
    throw CheckpointError(
        fmt::format("{}: checksum mismatch in the file header; {}", path, kDamagedAdvice));
  }
  *section_count = load_u32_le(fields + sizeof(std::uint32_t));
  if (*section_count > kMaxSectionCount) {
    throw CheckpointError(
        fmt::format("{}: the file header announces {} sections (at most {} are possible); {}", path,
                    *section_count, kMaxSectionCount, kDamagedAdvice));
  }
}

void decode_meta(ByteReader& r, const std::string& context, CheckpointState* state) {
  state->kind = r.str("the kind");
  if (!is_valid_kind(state->kind)) {
    throw CheckpointError(
        fmt::format("{} is malformed: the kind is \"{}\", expected \"{}\" or \"{}\"; {}", context,
                    state->kind, kCheckpointKind, kModelKind, kDamagedAdvice));
  }
  state->config_hash = r.u64("the config hash");
  state->network_signature = r.str("the network signature");
  state->epoch = r.i64("the epoch");
  state->round_in_epoch = r.i64("the round in the epoch");
  state->iteration = r.i64("the iteration");
  if (state->epoch < 0 || state->round_in_epoch < 0 || state->iteration < 0) {
    throw CheckpointError(fmt::format(
        "{} is malformed: negative position (epoch {}, round {}, iteration {}); {}", context,
        state->epoch, state->round_in_epoch, state->iteration, kDamagedAdvice));
  }
  // Beyond these no run gets: the epoch is counted in an int, and iterations and rounds have
  // room to be added to.
  constexpr std::int64_t kMaxEpoch = std::numeric_limits<std::int32_t>::max() - 1;
  constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;
  if (state->epoch > kMaxEpoch || state->round_in_epoch > kMaxCount ||
      state->iteration > kMaxCount) {
    throw CheckpointError(fmt::format(
        "{} is malformed: position out of range (epoch {}, round {}, iteration {}; at most "
        "epoch {} and {} rounds or iterations); {}",
        context, state->epoch, state->round_in_epoch, state->iteration, kMaxEpoch, kMaxCount,
        kDamagedAdvice));
  }
  // Each entry holds at least its two string lengths.
  const std::size_t entries = r.count("the metadata entry count", 2 * sizeof(std::uint64_t));
  for (std::size_t i = 0; i < entries; ++i) {
    std::string key = r.str("a metadata key");
    state->metadata[key] = r.str("a metadata value");
  }
  r.expect_end("the metadata");
}

void decode_updater_states(ByteReader& r, CheckpointState* state) {
  const std::size_t workers = r.count("the updater state count", sizeof(std::uint64_t));
  state->updater_states.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    const std::size_t n = r.count("an updater state length", sizeof(float));
    state->updater_states.push_back(r.floats(n, "an updater state"));
  }
  r.expect_end("the updater states");
}

void decode_rng_counters(ByteReader& r, CheckpointState* state) {
  const std::size_t n = r.count("the random-stream counter count", sizeof(std::uint64_t));
  state->rng_counters.reserve(n);
  for (std::size_t i = 0; i < n; ++i) state->rng_counters.push_back(r.u64("a counter"));
  r.expect_end("the random-stream counters");
}

}  // namespace

void write_checkpoint(const std::string& path, const CheckpointState& state) {
  DL_CHECK(is_valid_kind(state.kind), "checkpoint kind must be \"checkpoint\" or \"model\"");

  SectionBuilder meta(kSectionTags[kMeta]);
  meta.add_encoded(encode_meta(state));

  SectionBuilder parameters(kSectionTags[kParameters]);
  parameters.add_view(state.parameters.data(), state.parameters.size() * sizeof(float));

  SectionBuilder updater(kSectionTags[kUpdater]);
  updater.add_encoded(encode_u64(state.updater_states.size()));
  for (const std::vector<float>& worker_state : state.updater_states) {
    updater.add_encoded(encode_u64(worker_state.size()));
    updater.add_view(worker_state.data(), worker_state.size() * sizeof(float));
  }

  SectionBuilder rng(kSectionTags[kRng]);
  ByteWriter counters;
  counters.u64(state.rng_counters.size());
  for (std::uint64_t c : state.rng_counters) counters.u64(c);
  rng.add_encoded(counters.bytes());

  ByteWriter header;
  header.raw(kMagic.data(), kMagic.size());
  header.u32(kCheckpointFormatVersion);
  header.u32(kSectionCount);
  header.u32(crc_update(0, header.bytes().data(), header.bytes().size()));

  std::vector<ByteSpan> pieces{{header.bytes().data(), header.bytes().size()}};
  for (SectionBuilder* section : {&meta, &parameters, &updater, &rng}) section->emit(&pieces);
  write_file_atomically(path, pieces);
}

namespace {

// dl-train writes every byte of its files. A huge section in a file mostly absent from the disk
// (a sparse file declaring a terabyte) is refused before memory is allocated for it; files
// smaller than the threshold are allowed any layout (compressing file systems store zeros as
// holes).
void check_not_sparse(const InputFile& file, const std::string& path, const char* tag,
                      std::uint64_t length) {
  constexpr std::uint64_t kSparseCheckBytes = std::uint64_t{256} << 20;
  if (length < kSparseCheckBytes || file.allocated_bytes() >= length / 2) return;
  throw CheckpointError(fmt::format(
      "{}: section '{}' declares {} bytes but only {} bytes of the file are on disk (a sparse "
      "file); it was not written by dl-train or is damaged: resume from another checkpoint",
      path, tag, length, file.allocated_bytes()));
}

}  // namespace

CheckpointState read_checkpoint(const std::string& path) {
  InputFile file(path);
  std::uint32_t section_count = 0;
  check_file_header(file, path, &section_count);

  CheckpointState state;
  std::array<bool, kSectionCount> seen{};
  for (std::uint32_t index = 1; index <= section_count; ++index) {
    if (file.remaining() < kSectionHeaderBytes) {
      throw CheckpointError(fmt::format(
          "{}: truncated in the header of section {} of {}: expected {} bytes, found {}; {}", path,
          index, section_count, kSectionHeaderBytes, file.remaining(), kDamagedAdvice));
    }
    std::array<unsigned char, kSectionHeaderBytes> header{};
    file.read(header.data(), header.size(), "a section header");
    std::size_t id = 0;
    while (id < kSectionCount && std::memcmp(header.data(), kSectionTags[id], kTagBytes) != 0) ++id;
    if (id == kSectionCount) {
      throw CheckpointError(fmt::format(
          "{}: unknown section tag '{}' (section {} of {}); the file is damaged or was written "
          "by an incompatible dl-train",
          path, printable_tag(header.data()), index, section_count));
    }
    const char* tag = kSectionTags[id];
    if (seen[id]) {
      throw CheckpointError(
          fmt::format("{}: section '{}' appears twice; {}", path, tag, kDamagedAdvice));
    }
    seen[id] = true;
    const std::uint64_t length = load_u64_le(header.data() + kTagBytes);
    const std::uint32_t stored_crc = load_u32_le(header.data() + kTagBytes + sizeof(length));
    if (length > file.remaining()) {
      throw CheckpointError(
          fmt::format("{}: truncated in section '{}': expected {} bytes, found {}; {}", path, tag,
                      length, file.remaining(), kDamagedAdvice));
    }
    check_not_sparse(file, path, tag, length);
    const std::string what = fmt::format("section '{}'", tag);
    const std::string context = fmt::format("{}: {}", path, what);
    const std::uint32_t header_crc = crc_update(0, header.data(), kTagBytes + sizeof(length));

    if (id == kParameters) {
      // Read straight into the parameter vector: the largest section is never held twice.
      if (length % sizeof(float) != 0) {
        throw CheckpointError(
            fmt::format("{} is malformed: its length {} is not a whole number of floats; {}",
                        context, length, kDamagedAdvice));
      }
      resize_for_section(state.parameters, length / sizeof(float), context, length);
      file.read(state.parameters.data(), static_cast<std::size_t>(length), what);
      if (crc_update(header_crc, state.parameters.data(), length) != stored_crc) {
        throw CheckpointError(
            fmt::format("{}: checksum mismatch in {}; {}", path, what, kDamagedAdvice));
      }
      continue;
    }
    std::vector<unsigned char> payload;
    resize_for_section(payload, length, context, length);
    file.read(payload.data(), payload.size(), what);
    if (crc_update(header_crc, payload.data(), payload.size()) != stored_crc) {
      throw CheckpointError(
          fmt::format("{}: checksum mismatch in {}; {}", path, what, kDamagedAdvice));
    }
    ByteReader reader(payload.data(), payload.size(), context);
    if (id == kMeta) decode_meta(reader, context, &state);
    if (id == kUpdater) decode_updater_states(reader, &state);
    if (id == kRng) decode_rng_counters(reader, &state);
  }
  if (file.remaining() != 0) {
    throw CheckpointError(fmt::format("{}: {} unexpected bytes after the last section; {}", path,
                                      file.remaining(), kDamagedAdvice));
  }
  for (std::size_t id = 0; id < kSectionCount; ++id) {
    if (!seen[id]) {
      throw CheckpointError(
          fmt::format("{}: section '{}' is missing; {}", path, kSectionTags[id], kDamagedAdvice));
    }
  }
  // Each section's checksum holds, yet they must also agree: a parameter section of another
  // length than the file's own network counts read as "saved from a different network", which
  // blamed the config, and a resume did not fall back to an older checkpoint.
  const std::optional<std::uint64_t> counted = signature_parameter_count(state.network_signature);
  if (counted && *counted != state.parameters.size()) {
    throw CheckpointError(fmt::format(
        "{}: section 'PARM' holds {} parameters, but the file's own network signature counts {}; "
        "{}",
        path, state.parameters.size(), *counted, kDamagedAdvice));
  }
  return state;
}

}  // namespace dl
