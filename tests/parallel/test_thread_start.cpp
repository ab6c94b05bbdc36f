// A thread the system refuses to start is a ThreadStartError (exit 7) naming the thread, the
// limits and the keys to lower, not an internal error saying "Resource temporarily unavailable".
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>

#include <catch2/catch.hpp>

#include "core/thread_start.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// The uid and gid of 'nobody': a user with no other processes, whose process limit binds (root's
// does not).
constexpr uid_t kNobody = 65534;
constexpr int kChildFailed = 99;
constexpr std::size_t kMessageBytes = 4096;

// In a child process held to one process and thread for its user (as 'nobody' when run as root),
// runs `starts`; returns the ThreadStartError's exit code and message ("" when none was thrown).
std::pair<int, std::string> under_nproc_of_one(const std::function<void()>& starts) {
  int channel[2];
  REQUIRE(::pipe(channel) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(channel[0]);
    const bool dropped = ::getuid() != 0 || (::setgid(kNobody) == 0 && ::setuid(kNobody) == 0);
    const struct rlimit one { 1, 1 };
    if (!dropped || ::setrlimit(RLIMIT_NPROC, &one) != 0) ::_exit(kChildFailed);
    std::string report;
    try {
      starts();
    } catch (const dl::ThreadStartError& e) {
      report = std::to_string(static_cast<int>(e.code())) + " " + e.what();
    }
    if (::write(channel[1], report.data(), report.size()) < 0) ::_exit(kChildFailed);
    ::_exit(0);
  }
  ::close(channel[1]);
  std::string report(kMessageBytes, '\0');
  const ssize_t got = ::read(channel[0], report.data(), report.size());
  ::close(channel[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  report.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  const std::size_t space = report.find(' ');
  if (space == std::string::npos) return {0, ""};
  return {std::stoi(report.substr(0, space)), report.substr(space + 1)};
}

}  // namespace

TEST_CASE("a refused thread start names the thread, the limits and what to change",
          "[thread_start]") {
  dl::ThreadLimits limits;
  limits.user_processes = 64;
  const std::string capped =
      dl::thread_start_message("worker 3's thread", "Resource temporarily unavailable", limits);
  CHECK(capped ==
        "could not start worker 3's thread: Resource temporarily unavailable; this user may run "
        "64 processes and threads in all (ulimit -u); lower parallel.workers, "
        "parallel.blasThreads or parallel.prefetchBuffer, or raise ulimit -u");
  limits.address_space_bytes = std::uint64_t{6000} << 20;
  const std::string spaced = dl::thread_start_message("worker 3's thread", "Resource", limits);
  CHECK_THAT(spaced, Contains("(ulimit -u), and this process's address space, from which each "
                              "thread's stack is reserved, to 6000 MiB (ulimit -v); lower"));
  CHECK_THAT(spaced, EndsWith("or raise ulimit -u or ulimit -v"));
  limits.address_space_bytes.reset();
  limits.user_processes.reset();
  limits.cgroup_pids = 100;
  CHECK_THAT(dl::thread_start_message("x", "y", limits),
             Contains("x: y; ulimit -u is unlimited, this cgroup 100 (pids.max); lower"));

  const std::system_error refused(std::make_error_code(std::errc::resource_unavailable_try_again));
  const dl::ThreadStartError error("the loader", refused);
  CHECK(error.code() == dl::ExitCode::kOutOfMemory);
  CHECK_THAT(error.what(), StartsWith("could not start the loader: Resource temporarily "
                                      "unavailable; "));
}

TEST_CASE("start_thread under a process limit of one throws ThreadStartError", "[thread_start]") {
  const auto [code, message] =
      under_nproc_of_one([] { dl::start_thread("the test's thread", [] {}).join(); });
  CHECK(code == static_cast<int>(dl::ExitCode::kOutOfMemory));
  CHECK_THAT(message, StartsWith("could not start the test's thread: Resource temporarily "
                                 "unavailable; this user may run 1 processes and threads in all "
                                 "(ulimit -u)"));
  CHECK_THAT(message, Contains("raise ulimit -u"));
}

namespace {

// The threads of this process (entries of /proc/self/task).
int thread_count() {
  DIR* tasks = ::opendir("/proc/self/task");
  REQUIRE(tasks != nullptr);
  int count = 0;
  while (const dirent* entry = ::readdir(tasks)) count += entry->d_name[0] != '.';
  ::closedir(tasks);
  return count;
}

std::string probe_name(int i) {
  return "probe thread " + std::to_string(i + 1);
}

}  // namespace

TEST_CASE("check_threads_start starts and ends its threads, or names the one refused",
          "[thread_start]") {
  const int before = thread_count();
  dl::check_threads_start(6, probe_name);
  CHECK(thread_count() == before);
  dl::check_threads_start(0, probe_name);

  const auto [code, message] = under_nproc_of_one([] { dl::check_threads_start(3, probe_name); });
  CHECK(code == static_cast<int>(dl::ExitCode::kOutOfMemory));
  CHECK_THAT(message, StartsWith("could not start probe thread 1: Resource temporarily "
                                 "unavailable; "));
}
