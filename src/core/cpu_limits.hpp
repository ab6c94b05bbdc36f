// The CPUs this process may run on, from the places a launcher or a container runtime limits
// them: the CPU affinity mask (taskset, a Slurm cpuset, mpirun --bind-to) and the cgroup CPU
// quota (a Kubernetes CPU limit, docker --cpus), cgroup v2's cpu.max or v1's CFS quota.
#pragma once

#include <string>

namespace dl {

struct CpuLimits {
  int online = 1;            // CPUs the machine has online
  int affinity = 0;          // CPUs in this process's affinity mask; 0 when unknown
  std::string affinity_key;  // the mask itself, to tell which processes share it
  double quota = 0.0;        // CPUs' worth of time the cgroup quota allows; 0 = no quota
  std::string quota_source;  // the file and its value, e.g. `cpu.max "150000 100000" in /sys/...`
  std::string cgroup_key;    // the cgroup directory holding the quota, to tell who shares it
};

// Reads the limits of this process. `fs_root` is prefixed to /proc and /sys paths so that tests
// can read a fake tree (as hwloc's HWLOC_FSROOT does); "" for the real machine.
CpuLimits read_cpu_limits(const std::string& fs_root = "");

// The CPUs these limits leave this process: its affinity mask's (else the online CPUs), capped
// by the cgroup quota rounded up. Not shared out among the processes that hold the same limits:
// that is the training threads' budget (parallel/thread_budget.hpp).
int usable_cpus(const CpuLimits& limits);

}  // namespace dl
