#include "backend_selection.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dl::gpu {

namespace {

constexpr int kDecimal = 10;

std::string where(const Config& config) {
  return config.sourcePath.empty() ? std::string("config") : config.sourcePath;
}

// What the CUDA runtime was told to show this process, for messages.
std::string visible_view() {
  const char* listed = std::getenv("CUDA_VISIBLE_DEVICES");
  return listed == nullptr ? std::string("CUDA_VISIBLE_DEVICES is not set")
                           : fmt::format("CUDA_VISIBLE_DEVICES={}", listed);
}

}  // namespace

int parse_priority(const char* variable, const char* value, int fallback) {
  if (value == nullptr || *value == '\0') return fallback;
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, kDecimal);
  if (errno != 0 || end == value || *end != '\0' || parsed < INT_MIN || parsed > INT_MAX) {
    throw ConfigError(std::string("environment variable ") + variable + ": '" + value +
                      "' is not a whole number; set it to an integer (of " + kCpuPriorityVariable +
                      " and " + kGpuPriorityVariable +
                      ", the higher wins for backend: auto) or unset it");
  }
  return static_cast<int>(parsed);
}

BackendPriorities priorities_from_environment() {
  BackendPriorities p;
  p.cpu =
      parse_priority(kCpuPriorityVariable, std::getenv(kCpuPriorityVariable), kDefaultCpuPriority);
  p.gpu =
      parse_priority(kGpuPriorityVariable, std::getenv(kGpuPriorityVariable), kDefaultGpuPriority);
  return p;
}

bool auto_takes_gpu(const BackendPriorities& p, int visible_devices) {
  return visible_devices > 0 && p.gpu > p.cpu;
}

std::vector<int> devices_for_process(const Config& config, int visible_devices,
                                     const GpuNeighbours& neighbours, const std::string& why) {
  if (visible_devices <= 0) {
    throw ConfigError(where(config) + ": backend cuda needs a GPU, but no CUDA device is " +
                      "visible (" + why + "); set backend: cpu or auto, or run where nvidia-smi " +
                      "lists a GPU (and CUDA_VISIBLE_DEVICES does not hide it)");
  }
  std::vector<int> candidates = config.cuda.devices;
  if (candidates.empty()) {
    for (int d = 0; d < visible_devices; ++d) candidates.push_back(d);
  }
  for (const int d : candidates) {
    if (d < 0 || d >= visible_devices) {
      throw ConfigError(where(config) + ": cuda.devices lists device " + std::to_string(d) +
                        ", but " + std::to_string(visible_devices) +
                        " device(s) are visible, numbered from 0; list devices below " +
                        std::to_string(visible_devices) + " or write devices: all");
    }
  }
  const int processes = std::max(1, neighbours.processes);
  const int count = static_cast<int>(candidates.size());
  if (processes > count) {
    throw ConfigError(fmt::format(
        "{}: {} processes of this job on this machine see the same {} GPU(s) ({}), and two "
        "processes cannot share a GPU; start at most {} process(es) per machine (one per GPU: "
        "srun --ntasks-per-node={} --gpus-per-task=1, mpirun -npernode {}), or one process "
        "with parallel.workers for several GPUs",
        where(config), processes, count, visible_view(), count, count, count));
  }
  // Equal parts keep every process's pace the same; GPUs left over are named in the placement.
  const int part = config.cuda.allowMultiGPU ? count / processes : 1;
  const auto first = candidates.begin() + static_cast<std::ptrdiff_t>(neighbours.index) * part;
  return std::vector<int>(first, first + part);
}

std::vector<int> devices_for_run(const Config& config, int visible_devices,
                                 const std::string& why) {
  return devices_for_process(config, visible_devices, GpuNeighbours{}, why);
}

std::string describe_process_share(const Config& config, int visible_devices,
                                   const GpuNeighbours& neighbours,
                                   const std::vector<int>& devices) {
  if (neighbours.processes <= 1) return {};
  const int candidates =
      config.cuda.devices.empty() ? visible_devices : static_cast<int>(config.cuda.devices.size());
  const int used = static_cast<int>(devices.size()) * neighbours.processes;
  std::string line =
      fmt::format("process {} of the {} on this machine that see these {} GPU(s) ({}); ",
                  neighbours.index, neighbours.processes, candidates, visible_view());
  if (used < candidates) {
    line += fmt::format("{} GPU(s) left unused ({} split into equal parts{}); ", candidates - used,
                        candidates,
                        config.cuda.allowMultiGPU ? "" : ", one per process: allowMultiGPU false");
  }
  return line;
}

int workers_sharing_device(const Config& config, std::size_t device_count, int worker) {
  if (device_count == 0) return 1;
  const std::size_t mine = static_cast<std::size_t>(worker) % device_count;
  int sharing = 0;
  for (int w = 0; w < config.parallel.workers; ++w) {
    if (static_cast<std::size_t>(w) % device_count == mine) ++sharing;
  }
  return sharing > 0 ? sharing : 1;
}

std::string describe_worker_placement(const Config& config, const std::vector<int>& devices) {
  if (devices.empty()) return "no GPU";
  const int workers = std::max(config.parallel.workers, 1);
  std::string line = fmt::format("{} worker(s) on {} GPU(s):", workers,
                                 std::min<std::size_t>(devices.size(), workers));
  for (int w = 0; w < workers; ++w) {
    line += fmt::format("{} worker {} -> GPU {}", w == 0 ? "" : ",", w,
                        devices[static_cast<std::size_t>(w) % devices.size()]);
  }
  if (workers > static_cast<int>(devices.size()) && workers % devices.size() != 0) {
    const int most = workers_sharing_device(config, devices.size(), 0);
    const int fewest =
        workers_sharing_device(config, devices.size(), static_cast<int>(devices.size()) - 1);
    line += fmt::format(
        "; workers ({}) is not a multiple of the GPUs ({}): some GPUs run {} workers, others {}, "
        "and the busiest sets the pace of each round",
        workers, devices.size(), most, fewest);
  }
  return line;
}

}  // namespace dl::gpu
