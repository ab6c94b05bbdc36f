#include "core/thread_start.hpp"

#include <sys/resource.h>

#include <fstream>

namespace dl {

namespace {

// cgroup v2's limit on the tasks (processes and threads) of this process's cgroup: a count or
// "max".
constexpr const char* kCgroupPidsMax = "/sys/fs/cgroup/pids.max";

std::optional<std::uint64_t> cgroup_pids_limit() {
  std::ifstream file(kCgroupPidsMax);
  std::uint64_t limit = 0;
  if (file >> limit) return limit;
  return std::nullopt;
}

}  // namespace

ThreadLimits current_thread_limits() {
  ThreadLimits limits;
  struct rlimit processes {};
  if (::getrlimit(RLIMIT_NPROC, &processes) == 0 && processes.rlim_cur != RLIM_INFINITY)
    limits.user_processes = static_cast<std::uint64_t>(processes.rlim_cur);
  limits.cgroup_pids = cgroup_pids_limit();
  return limits;
}

std::string thread_start_message(const std::string& what, const std::string& reason,
                                 const ThreadLimits& limits) {
  std::string in_force = limits.user_processes
                             ? "this user may run " + std::to_string(*limits.user_processes) +
                                   " processes and threads in all (ulimit -u)"
                             : "ulimit -u is unlimited";
  if (limits.cgroup_pids)
    in_force += ", this cgroup " + std::to_string(*limits.cgroup_pids) + " (pids.max)";
  return "could not start " + what + ": " + reason + "; " + in_force +
         "; lower parallel.workers, parallel.blasThreads or parallel.prefetchBuffer, or raise "
         "ulimit -u";
}

ThreadStartError::ThreadStartError(const std::string& what, const std::system_error& cause)
    : Error(ExitCode::kOutOfMemory,
            thread_start_message(what, cause.code().message(), current_thread_limits())) {}

}  // namespace dl
