#include "io/file_access.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "core/message_text.hpp"

namespace dl {

namespace {

[[noreturn]] void throw_input_error(InputRole role, const std::string& message) {
  switch (role) {
    case InputRole::kConfig:
      throw ConfigError(message);
    case InputRole::kData:
      throw DataError(message);
    case InputRole::kCheckpoint:
      throw CheckpointError(message);
    case InputRole::kRunFile:
      throw Error(ExitCode::kConfigError, message);
    case InputRole::kRunOutput:
      throw IoError(message);
  }
  throw ConfigError(message);
}

const char* role_fix(InputRole role) {
  switch (role) {
    case InputRole::kConfig:
      return "give --config the path of a YAML file";
    case InputRole::kData:
      return "give the path of the data file itself (in the data keys, or predict's --input)";
    case InputRole::kCheckpoint:
      return "give the path of a .dlm model or .dlck checkpoint file";
    case InputRole::kRunFile:
      return "give report the run directory a training run wrote (its output.directory)";
    case InputRole::kRunOutput:
      return "dl-train writes this file: move what stands in its place out of the run directory";
  }
  return "check the path";
}

// What to do when the file at `path` cannot be opened at all (most often: it is not there).
const char* open_fix(InputRole role, const std::string& path) {
  // "~/data.csv" in a config or a quoted --set: only a shell expands the tilde.
  if (path.rfind("~/", 0) == 0 || path == "~")
    return "a path that starts with ~ is not expanded (only a shell does that, and not inside "
           "quotes or a config file): write the home directory out, e.g. /home/NAME/...";
  switch (role) {
    case InputRole::kConfig:
      return "check the path given to --config";
    case InputRole::kData:
      return is_published_data_file(path)
                 ? "check the path (scripts/get_data.sh fetches MNIST and Fashion-MNIST, "
                   "scripts/fetch_cifar10.sh CIFAR-10)"
                 : "check the path";
    case InputRole::kCheckpoint:
    case InputRole::kRunFile:
    case InputRole::kRunOutput:
      return "check the path";
  }
  return "check the path";
}

const char* role_noun(InputRole role) {
  switch (role) {
    case InputRole::kConfig:
      return "a config";
    case InputRole::kData:
      return "a data file";
    case InputRole::kCheckpoint:
      return "a checkpoint or model";
    case InputRole::kRunFile:
    case InputRole::kRunOutput:
      return "a run's log";
  }
  return "this file";
}

std::string over_limit(const std::string& path, std::uint64_t bytes, std::uint64_t limit,
                       InputRole role) {
  return fmt::format("{}: is {} bytes, over the limit of {} bytes ({} MiB) for {}; {}",
                     quoted_path(path), bytes, limit, limit >> 20, role_noun(role), role_fix(role));
}

// The encoding of text written as UTF-16 or UTF-32 (Windows' "Unicode" text, some spreadsheet
// exports) rather than UTF-8: told by its byte order mark, or without one by the NUL bytes an
// ASCII character carries in those encodings; empty for anything else. UTF-8 text holds no NUL
// byte in its first characters, nor does a binary file that starts with a magic number.
std::string_view wide_text_encoding(std::string_view text) {
  const auto byte = [&](std::size_t i) {
    return i < text.size() ? static_cast<unsigned char>(text[i]) : 0x100u;
  };
  if (byte(0) == 0xFF && byte(1) == 0xFE && byte(2) == 0 && byte(3) == 0) return "UTF-32LE";
  if (byte(0) == 0 && byte(1) == 0 && byte(2) == 0xFE && byte(3) == 0xFF) return "UTF-32BE";
  if (byte(0) == 0xFF && byte(1) == 0xFE) return "UTF-16LE";
  if (byte(0) == 0xFE && byte(1) == 0xFF) return "UTF-16BE";
  if (byte(0) != 0 && byte(1) == 0 && byte(2) == 0 && byte(3) == 0) return "UTF-32LE";
  if (byte(0) == 0 && byte(1) == 0 && byte(2) == 0 && byte(3) != 0 && byte(3) < 0x80)
    return "UTF-32BE";
  if (byte(0) != 0 && byte(0) < 0x80 && byte(1) == 0) return "UTF-16LE";
  if (byte(0) == 0 && byte(1) != 0 && byte(1) < 0x80) return "UTF-16BE";
  return {};
}

void check_utf8_text(const std::string& path, const std::string& text, InputRole role) {
  const std::string_view encoding = wide_text_encoding(text);
  if (encoding.empty()) return;
  const bool utf16 = encoding.substr(0, 6) == "UTF-16";
  throw_input_error(
      role,
      fmt::format("{}: is {} text{}, but {} is read as UTF-8; save it as UTF-8 (an editor's "
                  "\"Save as\" encoding, or iconv -f {} -t UTF-8 FILE > NEW_FILE)",
                  quoted_path(path), encoding, utf16 ? " (as Windows saves \"Unicode\" text)" : "",
                  role_noun(role), encoding));
}

}  // namespace

bool is_published_data_file(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  for (const char* prefix : {"train-images-idx", "train-labels-idx", "t10k-images-idx",
                             "t10k-labels-idx", "data_batch_", "test_batch"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return name == "train.bin" || name == "test.bin";
}

std::string describe_file_type(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

InputFd::InputFd(const std::string& path, InputRole role, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    const char* reason = std::strerror(errno);
    throw_input_error(role, role == InputRole::kConfig
                                ? fmt::format("{}: cannot read config file ({}); {}",
                                              quoted_path(path), reason, open_fix(role, path))
                                : fmt::format("{}: cannot open: {}; {}", quoted_path(path), reason,
                                              open_fix(role, path)));
  }
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int err = errno;
    ::close(fd_);
    throw_input_error(role,
                      fmt::format("{}: cannot stat: {}", quoted_path(path), std::strerror(err)));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw_input_error(role, fmt::format("{}: is {}, not a regular file; {}", quoted_path(path),
                                        describe_file_type(info.st_mode), role_fix(role)));
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  constexpr std::uint64_t kStatBlockBytes = 512;
  allocated_ = static_cast<std::uint64_t>(info.st_blocks) * kStatBlockBytes;
  if (max_bytes != 0 && size_ > max_bytes) {
    ::close(fd_);
    throw_input_error(role, over_limit(path, size_, max_bytes, role));
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFd::~InputFd() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string read_input_text(const std::string& path, InputRole role, std::uint64_t max_bytes) {
  InputFd input(path, role, max_bytes);
  std::string text;
  text.reserve(static_cast<std::size_t>(input.size()));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(input.fd(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_input_error(role, fmt::format("{}: cannot read: {}; {}", quoted_path(path),
                                          std::strerror(errno), open_fix(role, path)));
    }
    text.append(buffer, static_cast<std::size_t>(n));
    // A file that grows while it is read is held to the same limit.
    if (max_bytes != 0 && text.size() > max_bytes)
      throw_input_error(role, over_limit(path, text.size(), max_bytes, role));
  }
  check_utf8_text(path, text, role);
  return text;
}

std::optional<std::string> read_optional_text(const std::string& path, InputRole role,
                                              std::uint64_t max_bytes) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT) return std::nullopt;
  // A dangling link reads as missing, as opening it would say.
  if (S_ISLNK(info.st_mode) && ::stat(path.c_str(), &info) != 0 && errno == ENOENT)
    return std::nullopt;
  return read_input_text(path, role, max_bytes);
}

std::string read_config_text(const std::string& path) {
  return read_input_text(path, InputRole::kConfig, kMaxConfigBytes);
}

int open_output(const std::string& path, int flags, unsigned mode) {
  return ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags, static_cast<mode_t>(mode));
}

int create_temporary(const std::string& path, unsigned mode) {
  const int flags = O_CREAT | O_EXCL | O_TRUNC;
  int fd = open_output(path, flags, mode);
  if (fd < 0 && errno == EEXIST) {
    // The name carries this process id: whatever is there is a leftover of an earlier process
    // that had the same id (containers reuse small ids), or a planted link.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return -1;
    fd = open_output(path, flags, mode);
  }
  return fd;
}

}  // namespace dl
