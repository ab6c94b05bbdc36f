// Which backend and which GPUs a run uses: the rules of the CUDA registry that need no GPU, kept
// apart so that they are tested on any machine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend/gpu_devices.hpp"
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

// The device ordinals this process's workers cycle through (worker w on devices[w mod size]).
// The candidates are cuda.devices in the given order, or all visible ones when it is empty. The
// processes of this machine that see the same GPUs (`neighbours`) split the candidates into
// equal parts, in local-rank order, and this process takes its part, or only the first device
// of it when cuda.allowMultiGPU is false. Throws ConfigError when no device is visible (naming
// `why`), a listed one is not, or the processes outnumber the candidates (NCCL cannot give two
// processes one GPU).
std::vector<int> devices_for_process(const Config& config, int visible_devices,
                                     const GpuNeighbours& neighbours, const std::string& why);
// The same for a process alone on its machine.
std::vector<int> devices_for_run(const Config& config, int visible_devices, const std::string& why);

// For the start plan, when several processes of this machine see the same GPUs: which part of
// them this process takes, and which GPUs no process uses (when they do not split evenly).
// Empty for a process alone.
std::string describe_process_share(const Config& config, int visible_devices,
                                   const GpuNeighbours& neighbours,
                                   const std::vector<int>& devices);

// How many of the run's parallel.workers run on the same device as `worker` (worker w runs on
// devices[w mod devices.size()]); at least 1.
int workers_sharing_device(const Config& config, std::size_t device_count, int worker);

// One line for the start of a run: which GPU each worker runs on, and, when parallel.workers is
// not a multiple of the devices, that some GPUs carry more workers than others (which then set
// the pace of every round).
std::string describe_worker_placement(const Config& config, const std::vector<int>& devices);

}  // namespace dl::gpu
