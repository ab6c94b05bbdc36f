#include "core/cpu_limits.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace dl {
namespace {

// Enough for the largest machines Linux supports; sched_getaffinity fails with EINVAL when the
// kernel's mask is larger than the one passed, so the size is doubled until it fits.
constexpr int kFirstMaskCpus = 1024;
constexpr int kMostMaskCpus = 1 << 16;

void read_affinity(CpuLimits& limits) {
  for (int cpus = kFirstMaskCpus; cpus <= kMostMaskCpus; cpus *= 2) {
    cpu_set_t* mask = CPU_ALLOC(cpus);
    if (mask == nullptr) return;
    const std::size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, mask);
    if (sched_getaffinity(0, bytes, mask) == 0) {
      limits.affinity = CPU_COUNT_S(bytes, mask);
      limits.affinity_key.assign(reinterpret_cast<const char*>(mask), bytes);
      CPU_FREE(mask);
      return;
    }
    CPU_FREE(mask);
  }
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct CgroupMount {
  std::string root;   // the path inside the hierarchy that is mounted (often "/")
  std::string point;  // where it is mounted
};

// /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS ... - FSTYPE SOURCE SUPER".
// The cgroup2 mount, or the v1 mount whose super options name the cpu controller.
bool find_mount(const std::string& fs_root, bool v2, CgroupMount& mount) {
  std::ifstream in(fs_root + "/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point, word;
    fields >> id >> parent >> device >> root >> point;
    while (fields >> word && word != "-") {
    }
    std::string type, source, super;
    fields >> type >> source >> super;
    const bool cpu_controller = ("," + super + ",").find(",cpu,") != std::string::npos;
    if ((v2 && type == "cgroup2") || (!v2 && type == "cgroup" && cpu_controller)) {
      mount = {root, point};
      return true;
    }
  }
  return false;
}

// /proc/self/cgroup: "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
bool cgroup_path(const std::string& fs_root, bool v2, std::string& path) {
  std::ifstream in(fs_root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const std::size_t first = line.find(':');
    const std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool match = v2 ? line.compare(0, first, "0") == 0 && controllers.empty()
                          : ("," + controllers + ",").find(",cpu,") != std::string::npos;
    if (match) {
      path = line.substr(second + 1);
      return true;
    }
  }
  return false;
}

// A quota of `quota` microseconds per `period` microseconds; 0 when there is none.
double quota_cpus(long long quota, long long period) {
  return quota > 0 && period > 0 ? static_cast<double>(quota) / static_cast<double>(period) : 0.0;
}

// The quota set in one cgroup directory, in CPUs (0 = none), and its file's text in `value`.
double quota_in(const std::string& dir, bool v2, std::string& value) {
  if (v2) {
    const std::string line = first_line(dir + "/cpu.max");  // "max 100000" or "QUOTA PERIOD"
    value = fmt::format("cpu.max \"{}\"", line);
    std::istringstream fields(line);
    std::string quota;
    long long period = 0;
    if (!(fields >> quota >> period) || quota == "max") return 0.0;
    return quota_cpus(std::atoll(quota.c_str()), period);
  }
  const std::string quota = first_line(dir + "/cpu.cfs_quota_us");  // -1 = none
  const std::string period = first_line(dir + "/cpu.cfs_period_us");
  value = fmt::format("cpu.cfs_quota_us {} / cpu.cfs_period_us {}", quota, period);
  return quota_cpus(std::atoll(quota.c_str()), std::atoll(period.c_str()));
}

// A cgroup's quota also caps its children: the tightest from `directory` up to the mount point
// `top` applies.
void read_cgroup_quota(const std::string& directory, const std::string& top, bool v2,
                       CpuLimits& limits) {
  for (std::string dir = directory;; dir = dir.substr(0, dir.rfind('/'))) {
    std::string value;
    const double cpus = quota_in(dir, v2, value);
    if (cpus > 0.0 && (limits.quota == 0.0 || cpus < limits.quota)) {
      limits.quota = cpus;
      limits.quota_source = fmt::format("cgroup {} {} in {}", v2 ? "v2" : "v1", value, dir);
      limits.cgroup_key = dir;
    }
    if (dir.size() <= top.size() || dir.rfind('/') == std::string::npos) break;
  }
}

void read_hierarchy(const std::string& fs_root, bool v2, CpuLimits& limits) {
  CgroupMount mount;
  std::string path;
  if (!find_mount(fs_root, v2, mount) || !cgroup_path(fs_root, v2, path)) return;
  // Inside a cgroup namespace the mounted root and our path agree; elsewhere the path is below
  // the mounted root.
  if (mount.root != "/" && path.compare(0, mount.root.size(), mount.root) == 0) {
    path = path.substr(mount.root.size());
  }
  const std::string top = fs_root + mount.point;
  read_cgroup_quota(path == "/" ? top : top + path, top, v2, limits);
}

}  // namespace

int usable_cpus(const CpuLimits& limits) {
  const int mask_cpus = std::max(1, limits.affinity > 0 ? limits.affinity : limits.online);
  if (limits.quota <= 0.0) return mask_cpus;
  return std::min(mask_cpus, std::max(1, static_cast<int>(std::ceil(limits.quota))));
}

CpuLimits read_cpu_limits(const std::string& fs_root) {
  CpuLimits limits;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  limits.online = online > 0 ? static_cast<int>(online) : 1;
  read_affinity(limits);
  // Both hierarchies may be mounted (a hybrid layout); the cpu controller sits in one of them,
  // and reading both finds it wherever it is.
  read_hierarchy(fs_root, true, limits);
  read_hierarchy(fs_root, false, limits);
  return limits;
}

}  // namespace dl
