// Which backend and which GPUs a run uses: the rules of the CUDA registry that need no GPU, kept
// apart so that they are tested on any machine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dl::gpu {

// Deeplearning4j's backend priorities: with both backends available, the higher number wins;
// by default the GPU (100) beats the CPU (0). The environment variables BACKEND_PRIORITY_CPU and
// BACKEND_PRIORITY_GPU override them, and decide only `backend: auto`.
inline constexpr int kDefaultCpuPriority = 0;
inline constexpr int kDefaultGpuPriority = 100;
inline constexpr const char* kCpuPriorityVariable = "BACKEND_PRIORITY_CPU";
inline constexpr const char* kGpuPriorityVariable = "BACKEND_PRIORITY_GPU";

struct BackendPriorities {
  int cpu = kDefaultCpuPriority;
  int gpu = kDefaultGpuPriority;
};

// The priority a variable's value sets: `fallback` when unset or empty; throws ConfigError when
// it is not a whole number.
int parse_priority(const char* variable, const char* value, int fallback);
BackendPriorities priorities_from_environment();

// backend: auto takes the GPU when its priority is strictly higher and a device is visible; a tie
// keeps the CPU, the embedded default.
bool auto_takes_gpu(const BackendPriorities& p, int visible_devices);

// The device ordinals a run's workers cycle through: cuda.devices in the given order, or all
// visible ones when it is empty; only the first when cuda.allowMultiGPU is false. Throws
// ConfigError when no device is visible (naming `why`) or a listed one is not.
std::vector<int> devices_for_run(const Config& config, int visible_devices, const std::string& why);

// How many of the run's parallel.workers run on the same device as `worker` (worker w runs on
// devices[w mod devices.size()]); at least 1.
int workers_sharing_device(const Config& config, std::size_t device_count, int worker);

// One line for the start of a run: which GPU each worker runs on, and, when parallel.workers is
// not a multiple of the devices, that some GPUs carry more workers than others (which then set
// the pace of every round).
std::string describe_worker_placement(const Config& config, const std::vector<int>& devices);

}  // namespace dl::gpu
