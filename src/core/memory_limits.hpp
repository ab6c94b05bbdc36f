// The memory this process may use, from the places a machine or a container limits it: physical
// memory, or the cgroup v2 memory.max (a Kubernetes memory limit, docker --memory) when lower.
// Shared by the check that a batch fits (train/run_setup.cpp) and the image cache's default
// size (data.cacheBytes: auto, data/image_store.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dl {

struct MemoryLimit {
  std::uint64_t bytes = 0;  // 0 when neither source can be read
  std::string source;       // "physical memory" or "the cgroup's memory.max"
};

MemoryLimit host_memory_limit();

// This process's address-space limit (RLIMIT_AS's soft limit, `ulimit -v`) in bytes; none when
// unlimited. Thread stacks, oneDNN's generated code and OpenBLAS's buffers are all mapped from it.
std::optional<std::uint64_t> address_space_limit();

}  // namespace dl
