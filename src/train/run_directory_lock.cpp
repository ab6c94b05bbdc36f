#include "train/run_directory_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
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

bool try_lock(int fd, int operation) {
  for (int attempt = 0; attempt < kLockTries; ++attempt) {
    if (::flock(fd, operation | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (attempt + 1 < kLockTries) std::this_thread::sleep_for(kLockRetryPause);
  }
  return false;
}

std::string describe_this_process() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown host");
  char when[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return fmt::format("pid {} on host {} since {}\n", ::getpid(), host, when);
}

}  // namespace

int take_run_directory_lock(const std::string& directory) {
  const std::string path = lock_path(directory);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    throw IoError(
        fmt::format("{}: cannot open the run directory's lock file: {}; check "
                    "permissions (a symbolic link there is refused)",
                    path, std::strerror(errno)));
  }
  if (!try_lock(fd, LOCK_EX)) throw_taken(directory, fd);
  const std::string me = describe_this_process();
  // The holder's name is advisory: a failure to write it does not stop the run.
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, me.data(), me.size(), 0);
  return fd;
}

void check_run_directory_lock(const std::string& directory) {
  const std::string path = lock_path(directory);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // no lock file: nobody has run here since it was created
  if (!try_lock(fd, LOCK_SH)) throw_taken(directory, fd);
  ::close(fd);  // closing releases the shared lock
}

}  // namespace dl
