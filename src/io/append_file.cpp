#include "io/append_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/file_access.hpp"
#include "io/posix_write.hpp"

namespace dl {

namespace {

constexpr mode_t kNewFileMode = 0644;

[[noreturn]] void throw_append_error(const std::string& path, const char* step, int err) {
  throw IoError(
      fmt::format("{}: {} failed: {}; {}", path, step, std::strerror(err), write_failure_fix(err)));
}

}  // namespace

AppendFile::AppendFile(std::string path, Mode mode) : path_(std::move(path)) {
  ignore_file_size_signal();
  const int flags = O_CREAT | O_APPEND | (mode == Mode::kTruncate ? O_TRUNC : 0);
  fd_ = open_output(path_, flags, kNewFileMode);
  if (fd_ < 0 && errno == ELOOP) {
    throw IoError(
        fmt::format("{}: is a symbolic link; dl-train does not write through links in "
                    "its run directory: remove it",
                    path_));
  }
  if (fd_ < 0) throw_append_error(path_, "opening for append", errno);
}

AppendFile::~AppendFile() {
  close_quietly();
}

AppendFile::AppendFile(AppendFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    close_quietly();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void AppendFile::close_quietly() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void AppendFile::append_line(std::string_view line) {
  std::string text;
  text.reserve(line.size() + 1);
  text.append(line);
  text.push_back('\n');
  const int err = write_all(fd_, text.data(), text.size());
  if (err != 0) throw_append_error(path_, "appending a line", err);
}

void AppendFile::sync() {
  if (::fdatasync(fd_) != 0) throw_append_error(path_, "fdatasync", errno);
}

}  // namespace dl
