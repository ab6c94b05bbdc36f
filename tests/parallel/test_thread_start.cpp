// A thread the system refuses to start is a ThreadStartError (exit 7) naming the thread, the
// limits and the keys to lower, not an internal error saying "Resource temporarily unavailable".
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include <catch2/catch.hpp>

#include "core/thread_start.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// The uid and gid of 'nobody': a user with no other processes, whose process limit binds (root's
// does not).
constexpr uid_t kNobody = 65534;
constexpr int kChildFailed = 99;
constexpr std::size_t kMessageBytes = 4096;

// In a child process held to one process and thread for its user (as 'nobody' when run as root),
// starts a thread; returns the ThreadStartError's exit code and message ("" when it started).
std::pair<int, std::string> start_thread_under_nproc_of_one() {
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
      dl::start_thread("the test's thread", [] {}).join();
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
  const auto [code, message] = start_thread_under_nproc_of_one();
  CHECK(code == static_cast<int>(dl::ExitCode::kOutOfMemory));
  CHECK_THAT(message, StartsWith("could not start the test's thread: Resource temporarily "
                                 "unavailable; this user may run 1 processes and threads in all "
                                 "(ulimit -u)"));
  CHECK_THAT(message, Contains("raise ulimit -u"));
}
