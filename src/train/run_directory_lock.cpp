#include "train/run_directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/node_identity.hpp"
#include "io/file_access.hpp"
#include "train/mount_point.hpp"
#include "train/run_directory.hpp"

namespace dl {

namespace {

// check_run_directory_lock holds a shared lock for an instant; a start that meets it tries again
// for this long before it calls the directory taken.
constexpr int kLockTries = 25;
constexpr std::chrono::milliseconds kLockRetryPause{20};

std::string lock_path(const std::string& directory) {
  return directory + "/" + RunDirectory::kLockName;
}

std::string holder_of(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\r')) holder.pop_back();
  return holder.empty() ? "a process that has not named itself yet" : holder;
}

[[noreturn]] void throw_taken(const std::string& directory, int fd) {
  const std::string holder = holder_of(fd);
  ::close(fd);
  throw IoError(fmt::format(
      "{}: another dl-train is using this run directory ({}); wait for it to end or stop it, or "
      "set output.directory elsewhere",
      directory, holder));
}

// What flock answered: the lock, another holder, no flock on this file system, or a failure.
enum class LockResult { kLocked, kBusy, kUnsupported, kFailed };

// The errors of a file system (or its mount) that has no flock, as Lustre (noflock) and NFS
// answer: none of them says that another process holds the lock.
bool flock_unsupported(int err) {
  return err == ENOLCK || err == EOPNOTSUPP || err == ENOTSUP || err == ENOSYS || err == EINVAL;
}

LockResult try_lock(int fd, int operation, int& err) {
  for (int attempt = 0; attempt < kLockTries; ++attempt) {
    if (::flock(fd, operation | LOCK_NB) == 0) return LockResult::kLocked;
    err = errno;
    if (flock_unsupported(err)) return LockResult::kUnsupported;
    if (err != EWOULDBLOCK && err != EINTR) return LockResult::kFailed;
    if (attempt + 1 < kLockTries) std::this_thread::sleep_for(kLockRetryPause);
  }
  return LockResult::kBusy;
}

[[noreturn]] void throw_lock_failed(const std::string& path, int fd, int err) {
  ::close(fd);
  throw IoError(
      fmt::format("{}: cannot lock the run directory's lock file: {}; check the file "
                  "system holding it",
                  path, std::strerror(err)));
}

std::string describe_this_process() {
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return fmt::format("pid {} on host {} since {}\n", ::getpid(), host_name(), when);
}

// The fallback, said once: why (flock's error and the mount) and what replaces it.
RunDirectoryClaim take_claim_instead(const std::string& directory, int flock_error) {
  std::string took_over;
  RunDirectoryClaim claim = RunDirectoryClaim::take(directory, took_over);
  std::cerr << fmt::format(
      "dl-train: {}: its file system has no flock (flock: {}; {}): the run directory is "
      "claimed by the file {} instead, removed when the run ends\n",
      directory, std::strerror(flock_error), mount_point_of(directory).describe(), claim.path());
  if (!took_over.empty()) {
    std::cerr << fmt::format("dl-train: {}: took over the claim of {}\n", claim.path(), took_over);
  }
  return claim;
}

}  // namespace

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), claim_(std::move(other.claim_)) {}

RunDirectoryLock& RunDirectoryLock::operator=(RunDirectoryLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    claim_ = std::move(other.claim_);
  }
  return *this;
}

void RunDirectoryLock::release() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  claim_.release();
}

// The lock file opened without waiting (O_NONBLOCK: opening a FIFO for reading would wait for a
// writer for ever, which a stop signal could not end), and refused unless a regular file.
int open_lock_file(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) return fd;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) return fd;
  ::close(fd);
  throw IoError(fmt::format("{}: the run directory's lock file is {}, not a regular file; move it "
                            "out of the run directory",
                            path, describe_file_type(info.st_mode)));
}

RunDirectoryLock take_run_directory_lock(const std::string& directory) {
  const std::string path = lock_path(directory);
  const int fd = open_lock_file(path, O_RDWR | O_CREAT);
  if (fd < 0) {
    throw IoError(
        fmt::format("{}: cannot open the run directory's lock file: {}; check "
                    "permissions (a symbolic link there is refused)",
                    path, std::strerror(errno)));
  }
  RunDirectoryLock lock;
  int err = 0;
  switch (try_lock(fd, LOCK_EX, err)) {
    case LockResult::kLocked:
      break;
    case LockResult::kBusy:
      throw_taken(directory, fd);
    case LockResult::kFailed:
      throw_lock_failed(path, fd, err);
    case LockResult::kUnsupported:
      ::close(fd);
      lock.claim_ = take_claim_instead(directory, err);
      return lock;
  }
  lock.fd_ = fd;
  // A claim file is the lock of a dl-train on a mount of this directory without flock.
  check_run_directory_claim(directory);
  const std::string me = describe_this_process();
  // The holder's name is advisory: a failure to write it does not stop the run.
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, me.data(), me.size(), 0);
  return lock;
}

void check_run_directory_lock(const std::string& directory) {
  const std::string path = lock_path(directory);
  const int fd = open_lock_file(path, O_RDONLY);
  if (fd >= 0) {
    int err = 0;
    switch (try_lock(fd, LOCK_SH, err)) {
      case LockResult::kLocked:
      case LockResult::kUnsupported:
        break;
      case LockResult::kBusy:
        throw_taken(directory, fd);
      case LockResult::kFailed:
        throw_lock_failed(path, fd, err);
    }
    ::close(fd);  // closing releases the shared lock
  }
  check_run_directory_claim(directory);
}

}  // namespace dl
