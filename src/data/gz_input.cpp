#include "data/gz_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "io/file_access.hpp"

namespace dl {
namespace {

// gzread takes an unsigned length and returns an int: keep each call well inside both.
constexpr std::size_t kMaxBytesPerGzread = std::size_t{1} << 30;
// zlib's own buffer for reading the compressed file (its default is 8 KiB).
constexpr unsigned kGzBufferBytes = 1u << 17;

// zlib prefixes its messages with the name of the stream ("<fd:3>" for a descriptor handed to
// gzdopen, else the path); ours already start with the path.
std::string zlib_reason(const char* message, const std::string& path) {
  if (message == nullptr) return "unknown error";
  std::string reason(message);
  const std::string prefix = path + ": ";
  if (reason.compare(0, prefix.size(), prefix) == 0) reason.erase(0, prefix.size());
  const std::size_t fd_name_end = reason.find(">: ");
  if (reason.rfind("<fd:", 0) == 0 && fd_name_end != std::string::npos)
    reason.erase(0, fd_name_end + 3);
  return reason;
}

}  // namespace

GzInput::GzInput(const std::string& path, const ExpectedFile& expected) : path_(path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw DataError(fmt::format("{}: is a directory, not {}; name the file itself, e.g. {}/{}",
                                path, expected.what, path, expected.example_name));
  }
  InputFd input(path, InputRole::kData);
  errno = 0;
  file_ = gzdopen(input.fd(), "rb");
  if (file_ == nullptr) {
    if (errno == 0 || errno == ENOMEM)
      throw Error(ExitCode::kOutOfMemory,
                  fmt::format("out of memory opening {} (zlib's buffers); {}", path,
                              out_of_memory_advice()));
    throw DataError(
        fmt::format("{}: cannot open: {}; check the path", path, std::strerror(errno)));
  }
  input.release();
  gzbuffer(file_, kGzBufferBytes);
}

GzInput::~GzInput() {
  if (file_ != nullptr) gzclose_r(file_);
}

std::size_t GzInput::read(void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const auto want = static_cast<unsigned>(std::min(n - done, kMaxBytesPerGzread));
    errno = 0;
    const int got = gzread(file_, out + done, want);
    if (got < 0) {
      int zerr = Z_OK;
      const char* zmsg = gzerror(file_, &zerr);
      if (zerr == Z_ERRNO) {
        throw DataError(fmt::format("{}: read error: {}; check the file and the disk", path_,
                                    std::strerror(errno)));
      }
      // zlib's own buffers could not be had (ulimit -v, a full machine): nothing is wrong with
      // the file, which "corrupt gzip data" and exit 3 said it was.
      if (zerr == Z_MEM_ERROR) {
        throw Error(ExitCode::kOutOfMemory,
                    fmt::format("out of memory decompressing {} (zlib's buffers); {}", path_,
                                out_of_memory_advice()));
      }
      // A failed gzread hands out none of the bytes it decoded before the damage, and a
      // checksum is checked after the whole stream: a count would only be of earlier reads.
      const std::uint64_t decoded = bytes_read_ + done;
      throw DataError(fmt::format(
          "{}: corrupt gzip data{} (zlib: {}); the file is damaged: {}", path_,
          decoded > 0 ? fmt::format(" after at least {} decompressed bytes", decoded) : "",
          zlib_reason(zmsg, path_), damaged_fix()));
    }
    done += static_cast<std::size_t>(got);
    if (static_cast<unsigned>(got) < want) {
      int zerr = Z_OK;
      gzerror(file_, &zerr);
      // zlib reports a gzip stream that stops before its trailer as Z_BUF_ERROR and hands out
      // what it could decode; the caller turns the short read into a "truncated" message.
      if (zerr == Z_BUF_ERROR) stream_cut_off_ = true;
      break;
    }
  }
  bytes_read_ += done;
  return done;
}

std::string GzInput::damaged_fix() const {
  return is_published_data_file(path_) ? "download the file again (scripts/get_data.sh)"
                                       : "write it again with the program that made it";
}

bool GzInput::compressed() const {
  return gzdirect(file_) == 0;
}

}  // namespace dl
