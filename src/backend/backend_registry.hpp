// Which backends this binary has, and how to make one. The build chooses the implementation
// file (backend_registry_cpu_only.cpp, or cuda/backend_registry_cuda.cpp when the CUDA backend is
// built): no #ifdef decides it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/gpu_devices.hpp"
#include "config/config.hpp"

namespace dl {

struct BackendAvailability {
  bool cuda_built = false;                    // the CUDA backend is compiled into this binary
  std::vector<DeviceInfo> devices;            // visible GPUs (empty without CUDA or without a GPU)
  std::vector<std::string> library_versions;  // "CUDA runtime 13.0", "cuDNN 9.x", ...
};

BackendAvailability backend_availability();

// The backend a run uses, and, when backend: auto trains on the CPU, why no GPU is used (no
// driver, no device, not built, the priorities), for one line on stderr.
struct BackendChoice {
  BackendKind kind = BackendKind::kCpu;
  // Set only when backend: auto chose the CPU: why, in a few words ("no NVIDIA driver");
  // `dl-train info` gives the whole story.
  std::string why_not_gpu;
};

// backend: cpu | cuda | auto (auto takes a GPU when one is visible; the default).
// BACKEND_PRIORITY_CPU / BACKEND_PRIORITY_GPU override auto as in Deeplearning4j: the higher
// number wins. Throws ConfigError when cuda is asked for and not available, naming why: cuda
// never falls back to the CPU.
BackendChoice choose_backend(const Config& config);
inline BackendKind resolve_backend(const Config& config) {
  return choose_backend(config).kind;
}

// A backend instance for worker `worker`: for CUDA, on GPU `worker mod n` of the n GPUs that are
// this process's share of the visible ones.
std::unique_ptr<Backend> make_backend(BackendKind kind, const Config& config, int worker,
                                      const GpuNeighbours& neighbours = {});

// For the start of a run: which device each worker runs on (empty for the CPU backend).
std::string describe_worker_placement(BackendKind kind, const Config& config,
                                      const GpuNeighbours& neighbours = {});

}  // namespace dl
