// How many threads each worker gets: the cores this process may use (CPU affinity and cgroup
// quota, shared with the other processes of the job that hold the same ones) divided among its
// workers, so that workers x threads never exceeds them, unless parallel.blasThreads says so.
#pragma once

#include <string>

#include "config/config.hpp"
#include "parallel/process_group.hpp"
#include "core/cpu_limits.hpp"

namespace dl {

// How many processes of this machine hold the same affinity mask, and the same cgroup quota,
// as this one (this one included): they split those CPUs.
struct CpuSharing {
  int affinity = 1;
  int quota = 1;
};

struct ThreadBudget {
  int cores = 1;  // this process's share
  int workers = 1;
  int threads_per_worker = 1;
  bool user_override = false;
  std::string cores_from;        // where `cores` came from, for the start plan
  std::string describe() const;  // the line printed at start
};

// The plan from the limits, pure: for tests and for plan_threads below.
ThreadBudget plan_threads(const ParallelConfig& parallel, const CpuLimits& limits,
                          const CpuSharing& sharing);

// The plan of this process: reads its limits and, collectively over `processes`, finds which
// processes of this machine share them.
ThreadBudget plan_threads(const ParallelConfig& parallel, ProcessGroup& processes);

}  // namespace dl
