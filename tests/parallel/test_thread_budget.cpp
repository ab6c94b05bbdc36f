// Thread planning: the CPUs a process may use (affinity and cgroup quota, read from a fake /proc
// and /sys tree), and how the processes of a machine that hold the same ones split them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "parallel/node_share.hpp"
#include "parallel/thread_budget.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// A fake root with /proc/self/{cgroup,mountinfo} and cgroup files, removed at the end.
class FakeRoot {
 public:
  FakeRoot() : path_(fs::temp_directory_path() / fs::path("dl-fsroot-XXXXXX")) {
    std::string pattern = path_.string();
    path_ = mkdtemp(pattern.data());
  }
  // A process in `cgroup` (/proc/self/cgroup's text) of the hierarchies mounted as `mountinfo`.
  FakeRoot(const std::string& mountinfo, const std::string& cgroup) : FakeRoot() {
    write("proc/self/mountinfo", mountinfo);
    write("proc/self/cgroup", cgroup);
  }
  ~FakeRoot() { fs::remove_all(path_); }
  void write(const std::string& relative, const std::string& text) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

constexpr const char* kV2Mount =
    "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr const char* kV1Mount =
    "31 22 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";

dl::ParallelConfig workers(int n, int blas_threads = 0) {
  dl::ParallelConfig p;
  p.workers = n;
  p.blasThreads = blas_threads;
  return p;
}

}  // namespace

TEST_CASE("cgroup v2: the tightest cpu.max from the process's cgroup up to the mount") {
  const FakeRoot root(kV2Mount, "0::/kubepods/pod1/container\n");
  root.write("sys/fs/cgroup/kubepods/pod1/container/cpu.max", "max 100000\n");
  root.write("sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
  root.write("sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n");
  const dl::CpuLimits limits = dl::read_cpu_limits(root.str());
  CHECK(limits.quota == Approx(1.5));
  CHECK_THAT(limits.quota_source, Contains("cgroup v2 cpu.max \"150000 100000\""));
  CHECK_THAT(limits.quota_source, Contains("kubepods/pod1"));
  // 1.5 CPUs are rounded up to 2 cores, whatever the affinity offers beyond them.
  dl::CpuLimits many = limits;
  many.online = many.affinity = 64;
  const dl::ThreadBudget plan = dl::plan_threads(workers(1), many, {});
  CHECK(plan.cores == 2);
  CHECK(plan.threads_per_worker == 2);
  CHECK_THAT(plan.describe(), Contains("cgroup quota: cgroup v2 cpu.max"));
  WARN("thread plan under a cgroup v2 quota of 1.5 CPUs (fake root): " << plan.describe());
}

TEST_CASE("cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us; -1 and max mean no quota") {
  const FakeRoot root(kV1Mount, "4:cpu,cpuacct:/slurm/job42\n12:memory:/x\n");
  root.write("sys/fs/cgroup/cpu,cpuacct/slurm/job42/cpu.cfs_quota_us", "400000\n");
  root.write("sys/fs/cgroup/cpu,cpuacct/slurm/job42/cpu.cfs_period_us", "100000\n");
  root.write("sys/fs/cgroup/cpu,cpuacct/slurm/cpu.cfs_quota_us", "-1\n");
  root.write("sys/fs/cgroup/cpu,cpuacct/slurm/cpu.cfs_period_us", "100000\n");
  dl::CpuLimits limits = dl::read_cpu_limits(root.str());
  CHECK(limits.quota == Approx(4.0));
  CHECK_THAT(limits.quota_source, Contains("cgroup v1 cpu.cfs_quota_us 400000"));
  limits.online = limits.affinity = 16;
  const dl::ThreadBudget plan = dl::plan_threads(workers(2), limits, {});
  CHECK(plan.cores == 4);
  CHECK(plan.threads_per_worker == 2);
  WARN("thread plan under a cgroup v1 quota of 4 CPUs (fake root): " << plan.describe());

  const FakeRoot unlimited(std::string(kV2Mount) + kV1Mount, "0::/\n4:cpu,cpuacct:/\n");
  unlimited.write("sys/fs/cgroup/cpu.max", "max 100000\n");
  unlimited.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  unlimited.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CHECK(dl::read_cpu_limits(unlimited.str()).quota == 0.0);
  FakeRoot nothing;  // no /proc, no cgroup files: no quota, no failure
  CHECK(dl::read_cpu_limits(nothing.str()).quota == 0.0);
}

TEST_CASE("this machine: the affinity mask is read and fits the online CPUs") {
  const dl::CpuLimits limits = dl::read_cpu_limits();
  CHECK(limits.online >= 1);
  CHECK(limits.affinity >= 1);
  CHECK(limits.affinity <= limits.online);
  CHECK_FALSE(limits.affinity_key.empty());
}

TEST_CASE("plan: a shared mask is split between the processes that hold it; a bound one is not") {
  dl::CpuLimits limits;
  limits.online = limits.affinity = 64;
  SECTION("8 unbound ranks of a 64-core machine, 2 workers each: 8 cores, 4 threads a worker") {
    const dl::ThreadBudget plan = dl::plan_threads(workers(2), limits, {8, 8});
    CHECK(plan.cores == 8);
    CHECK(plan.threads_per_worker == 4);
    CHECK_THAT(plan.describe(), Contains("shared by 8 processes"));
  }
  SECTION("each rank bound to its own 8 CPUs (srun --cpus-per-task=8): all 8 are its own") {
    limits.affinity = 8;
    const dl::ThreadBudget plan = dl::plan_threads(workers(1), limits, {1, 8});
    CHECK(plan.cores == 8);
    CHECK(plan.threads_per_worker == 8);
  }
  SECTION("a pod limit of 16 CPUs shared by its 8 ranks: 2 each") {
    limits.quota = 16.0;
    limits.quota_source = "cgroup v2 cpu.max \"1600000 100000\" in /sys/fs/cgroup";
    const dl::ThreadBudget plan = dl::plan_threads(workers(1), limits, {8, 8});
    CHECK(plan.cores == 2);
    CHECK_THAT(plan.describe(), Contains("cgroup quota"));
  }
  SECTION("taskset -c 0: one core, whatever the workers") {
    limits.affinity = 1;
    const dl::ThreadBudget plan = dl::plan_threads(workers(4), limits, {});
    CHECK(plan.cores == 1);
    CHECK(plan.threads_per_worker == 1);
    CHECK_THAT(plan.describe(), Contains("CPU affinity: 1 of 64 online CPUs"));
  }
  SECTION("parallel.blasThreads overrides the plan") {
    const dl::ThreadBudget plan = dl::plan_threads(workers(2, 5), limits, {});
    CHECK(plan.threads_per_worker == 5);
    CHECK(plan.user_override);
  }
}

TEST_CASE("share_of: the ranks of a machine holding the same thing, in local-rank order") {
  // Ranks 0-3 on one machine (same key), ranks 4-5 elsewhere; local ranks as the launcher says.
  const std::vector<std::uint64_t> keys = {7, 7, 9, 7, 7, 5};
  const std::vector<std::uint64_t> local = {3, 0, 1, 1, 0, 0};
  CHECK(dl::share_of(keys, local, 0).count == 4);
  CHECK(dl::share_of(keys, local, 0).index == 3);
  CHECK(dl::share_of(keys, local, 1).index == 0);  // local rank 0 with the lower rank first
  CHECK(dl::share_of(keys, local, 4).index == 1);
  CHECK(dl::share_of(keys, local, 3).index == 2);
  CHECK(dl::share_of(keys, local, 2).count == 1);
  CHECK(dl::share_of(keys, local, 5).index == 0);
}
