#include "parallel/thread_budget.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "parallel/node_share.hpp"

namespace dl {
namespace {

std::string shared_by(int processes) {
  return processes > 1 ? fmt::format(", shared by {} processes of this job", processes)
                       : std::string();
}

}  // namespace

ThreadBudget plan_threads(const ParallelConfig& parallel, const CpuLimits& limits,
                          const CpuSharing& sharing) {
  ThreadBudget b;
  // A mask that the processes of this machine hold alike is theirs together; a launcher that
  // binds each process to its own CPUs (srun --cpu-bind, mpirun --bind-to core) gives each a
  // mask of its own.
  const int mask_cpus = limits.affinity > 0 ? limits.affinity : limits.online;
  const int from_mask = std::max(1, mask_cpus / std::max(1, sharing.affinity));
  b.cores = from_mask;
  b.cores_from = limits.affinity > 0
                     ? fmt::format("CPU affinity: {} of {} online CPUs{}", limits.affinity,
                                   limits.online, shared_by(sharing.affinity))
                     : fmt::format("{} online CPUs (affinity unknown){}", limits.online,
                                   shared_by(sharing.affinity));
  if (limits.quota > 0.0) {
    // A fractional quota is rounded up, as Go's and the JVM's runtimes do: the last thread is
    // throttled part of the time rather than a core's worth of quota left unused.
    const double share = limits.quota / std::max(1, sharing.quota);
    const int from_quota = std::max(1, static_cast<int>(std::ceil(share)));
    const std::string quota = fmt::format("{} = {:g} CPUs{}", limits.quota_source, limits.quota,
                                          shared_by(sharing.quota));
    if (from_quota < from_mask) {
      b.cores = from_quota;
      const bool fractional = static_cast<double>(from_quota) != share;
      b.cores_from = fmt::format("cgroup quota: {}{}; {}", quota, fractional ? ", rounded up" : "",
                                 b.cores_from);
    } else {
      b.cores_from += fmt::format("; cgroup quota: {}", quota);
    }
  }
  b.workers = std::max(1, parallel.workers);
  b.user_override = parallel.blasThreads > 0;
  b.threads_per_worker = b.user_override ? parallel.blasThreads : std::max(1, b.cores / b.workers);
  return b;
}

ThreadBudget plan_threads(const ParallelConfig& parallel, ProcessGroup& processes) {
  const CpuLimits limits = read_cpu_limits();
  CpuSharing sharing;
  sharing.affinity = share_on_this_machine(processes, limits.affinity_key).count;
  sharing.quota = share_on_this_machine(processes, limits.cgroup_key).count;
  return plan_threads(parallel, limits, sharing);
}

std::string ThreadBudget::describe() const {
  return fmt::format("threads: {} worker(s) x {} thread(s){} on {} core(s) ({})", workers,
                     threads_per_worker, user_override ? " (parallel.blasThreads)" : "", cores,
                     cores_from);
}

}  // namespace dl
