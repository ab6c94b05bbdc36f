#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/message_text.hpp"
#include "io/file_access.hpp"
#include "io/posix_write.hpp"

namespace dl {

namespace {

constexpr mode_t kNewFileMode = 0644;

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

[[noreturn]] void throw_write_error(const std::string& path, const std::string& step, int err) {
  throw IoError(fmt::format("{}: cannot write the file ({}: {}); {}", path, step,
                            std::strerror(err), write_failure_fix(err)));
}

// Not space, permission or size (throw_write_error's advice): the folder is not there, never made
// (predict -o new/x.csv) or removed while the file was being written (a run directory deleted
// during training: the rename or the folder's sync then fails instead of the creation).
bool folder_missing(const std::string& path, int err) {
  struct stat folder {};
  return (err == ENOENT || err == ENOTDIR) &&
         (::stat(directory_of(path).c_str(), &folder) != 0 || !S_ISDIR(folder.st_mode));
}
[[noreturn]] void throw_folder_missing(const std::string& path, const std::string& step, int err) {
  throw IoError(fmt::format(
      "{}: cannot write the file: the folder {} does not exist ({}: {}); create it or move it "
      "back, or name a file in an existing folder",
      path, directory_of(path), step, std::strerror(err)));
}

// fsync of the directory makes the rename itself durable. Some file systems cannot sync a
// directory (EINVAL); the rename is then as durable as that file system allows.
int sync_directory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  if (::fsync(fd) != 0 && errno != EINVAL) err = errno;
  ::close(fd);
  return err;
}

// An output path that names something other than a regular file, links followed: a device
// (/dev/null, /dev/stdout on a terminal or pipe), a FIFO, a directory. The rename would replace
// the entry itself, so run as root `predict -o /dev/full` left a regular file in place of the
// device and exited 0. Written straight into instead (a device or a pipe has no old content to
// keep); a directory is refused. A link into /proc (/dev/stdout, /dev/stderr) names one of this
// process's descriptors: even on a regular file (`-o /dev/stdout > out.csv`) the rename would
// replace the link in /dev, so it is appended to, as a shell's redirection would have it written.
// Returns false for a regular file that is not such a link, or nothing there yet.
bool write_into_special_file(const std::string& path, const std::vector<ByteSpan>& pieces) {
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) return false;
  if (S_ISREG(target.st_mode)) {
    char link[16] = {};
    if (::readlink(path.c_str(), link, sizeof link - 1) < 0 || std::strncmp(link, "/proc/", 6) != 0)
      return false;
  }
  if (S_ISDIR(target.st_mode)) {
    throw IoError(fmt::format("{}: cannot write the file: it is a directory; name a file in it",
                              quoted_path(path)));
  }
  // O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of blocking for ever; writes block.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENXIO) {
    throw IoError(fmt::format(
        "{}: cannot write the file: it is a FIFO (named pipe) that no process is reading; start "
        "the reader first, or name a regular file",
        quoted_path(path)));
  }
  if (fd < 0) throw_write_error(path, "opening it", errno);
  int err = ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ? errno : 0;
  for (const ByteSpan& piece : pieces) {
    if (err == 0) err = write_all(fd, piece.data, piece.size);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) throw_write_error(path, "writing it", err);
  return true;
}

}  // namespace

void ignore_file_size_signal() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGXFSZ, SIG_IGN); });
}

std::string temporary_path(const std::string& path, long pid) {
  return fmt::format("{}.tmp-{}", path, pid);
}

std::string longest_temporary_path(const std::string& path) {
  return temporary_path(path, std::numeric_limits<pid_t>::max());
}

void write_named_output(const std::string& path, const std::string& bytes) {
  ignore_file_size_signal();
  const std::vector<ByteSpan> pieces{{bytes.data(), bytes.size()}};
  if (!write_into_special_file(path, pieces)) write_file_atomically(path, pieces);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  write_file_atomically(path, std::vector<ByteSpan>{{bytes.data(), bytes.size()}});
}

void write_file_atomically(const std::string& path, const std::vector<ByteSpan>& pieces) {
  ignore_file_size_signal();
  const std::string temp = temporary_path(path, ::getpid());
  // Created, never followed: a link planted at the temporary name is not written through.
  int fd = create_temporary(temp, kNewFileMode);
  const int create_error = errno;
  if (fd < 0 && (create_error == ENOENT || create_error == ENOTDIR))
    throw_folder_missing(path, "creating " + temp, create_error);
  if (fd < 0) throw_write_error(path, "creating " + temp, create_error);

  // Every failure before the rename goes through here: the old `path` has not been touched yet.
  const auto abandon = [&](const std::string& step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    if (folder_missing(path, err)) throw_folder_missing(path, step, err);
    throw_write_error(path, step, err);
  };
  for (const ByteSpan& piece : pieces) {
    const int err = write_all(fd, piece.data, piece.size);
    if (err != 0) abandon("writing " + temp, err);
  }
  if (::fsync(fd) != 0) abandon("fsync of " + temp, errno);
  const int close_result = ::close(fd);
  fd = -1;
  if (close_result != 0) abandon("closing " + temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) abandon("renaming " + temp, errno);

  const std::string directory = directory_of(path);
  const int err = sync_directory(directory);
  if (err != 0 && folder_missing(path, err))
    throw_folder_missing(path, "syncing " + directory, err);
  if (err != 0) {
    throw IoError(fmt::format(
        "{}: the file was written but its directory could not be synced ({}); it may not "
        "survive a crash: check the file system holding {}",
        path, std::strerror(err), directory));
  }
}

void refuse_output_over_inputs(const std::string& output, const std::string& option,
                               const std::vector<NamedInput>& inputs) {
  struct stat entry {}, target {};
  // What the rename would replace is the entry at `output` itself: a regular file, or a link,
  // which an input may name or be read through (a data file kept as a link to a shared copy:
  // predict -o over it replaced the link, breaking the config's path). Either is compared by
  // the file it reaches.
  if (output.empty() || ::lstat(output.c_str(), &entry) != 0) return;
  if (!S_ISREG(entry.st_mode) && !S_ISLNK(entry.st_mode)) return;
  if (::stat(output.c_str(), &target) != 0 || !S_ISREG(target.st_mode)) return;
  for (const NamedInput& input : inputs) {
    struct stat read {};
    if (input.path.empty() || ::stat(input.path.c_str(), &read) != 0) continue;
    if (read.st_dev != target.st_dev || read.st_ino != target.st_ino) continue;
    throw IoError(fmt::format(
        "{}: {} names the file this command reads as {} {}, so writing it would destroy that "
        "input; nothing was written: give {} another path",
        quoted_path(output), option, input.option, quoted_path(input.path), option));
  }
}

}  // namespace dl
