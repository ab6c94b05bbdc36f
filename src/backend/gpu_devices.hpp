// What a GPU backend knows of the machine: a visible device, and this process's share of them.
// Below the backend registry, because the CUDA backend (cuda/), which the registry links, fills
// them in.
#pragma once

#include <cstddef>
#include <string>

namespace dl {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

// This process among the processes of its machine that see the same GPUs (the same
// CUDA_VISIBLE_DEVICES): they split those GPUs between them, in local-rank order. A process
// alone, or one whose launcher gave it GPUs of its own, is {1, 0}.
struct GpuNeighbours {
  int processes = 1;
  int index = 0;
};

}  // namespace dl
