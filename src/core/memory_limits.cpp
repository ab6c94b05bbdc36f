#include "core/memory_limits.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace dl {

MemoryLimit host_memory_limit() {
  MemoryLimit limit;
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0)
    limit.bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  limit.source = "physical memory";
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");  // cgroup v2: a byte count or "max"
  std::string text;
  if (cgroup >> text && text != "max") {
    const std::uint64_t quota = std::strtoull(text.c_str(), nullptr, 10);
    if (quota > 0 && (limit.bytes == 0 || quota < limit.bytes)) {
      limit.bytes = quota;
      limit.source = "the cgroup's memory.max";
    }
  }
  return limit;
}

std::optional<std::uint64_t> address_space_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

}  // namespace dl
