#include "core/thread_start.hpp"

#include <sys/resource.h>

#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/memory_limits.hpp"

namespace dl {

namespace {

constexpr std::uint64_t kMebibyte = std::uint64_t{1} << 20;

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
  limits.address_space_bytes = address_space_limit();
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
  std::string raise = "ulimit -u";
  if (limits.address_space_bytes) {
    in_force +=
        ", and this process's address space, from which each thread's stack is reserved, "
        "to " +
        std::to_string(*limits.address_space_bytes / kMebibyte) + " MiB (ulimit -v)";
    raise += " or ulimit -v";
  }
  return "could not start " + what + ": " + reason + "; " + in_force +
         "; lower parallel.workers, parallel.blasThreads or parallel.prefetchBuffer, or raise " +
         raise;
}

void check_threads_start(int count, const std::function<std::string(int)>& what) {
  std::mutex mutex;
  std::condition_variable released;
  bool go = false;
  std::vector<std::thread> threads;
  const auto release_and_join = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      go = true;
    }
    released.notify_all();
    for (std::thread& t : threads) t.join();
  };
  try {
    for (int i = 0; i < count; ++i) {
      threads.push_back(start_thread(what(i), [&] {
        // An allocation, as each thread of training makes: glibc gives a thread its own heap
        // (up to 8 per core, 64 MiB of address space each, kept after the thread ends), which a
        // limited address space must hold too.
        std::free(std::malloc(1));
        std::unique_lock<std::mutex> lock(mutex);
        released.wait(lock, [&] { return go; });
      }));
    }
  } catch (...) {
    // A refusal, or a name or the vector failing to allocate: the threads started must end
    // before the error leaves (a joinable std::thread destroyed would terminate the process).
    release_and_join();
    throw;
  }
  release_and_join();
}

ThreadStartError::ThreadStartError(const std::string& what, const std::system_error& cause)
    : Error(ExitCode::kOutOfMemory,
            thread_start_message(what, cause.code().message(), current_thread_limits())) {}

}  // namespace dl
