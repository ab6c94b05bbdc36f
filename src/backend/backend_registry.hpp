// Which backends this binary has, and how to make one. The build chooses the implementation
// file (backend_registry_cpu_only.cpp, or cuda/backend_registry_cuda.cpp when the CUDA backend is
// built): no #ifdef decides it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"

namespace dl {

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::size_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

struct BackendAvailability {
  bool cuda_built = false;                    // the CUDA backend is compiled into this binary
  std::vector<DeviceInfo> devices;            // visible GPUs (empty without CUDA or without a GPU)
  std::vector<std::string> library_versions;  // "CUDA runtime 13.0", "cuDNN 9.x", ...
};

BackendAvailability backend_availability();

// The backend a run uses: backend: cpu | cuda | auto (auto takes a GPU when one is visible).
// BACKEND_PRIORITY_CPU / BACKEND_PRIORITY_GPU override auto as in Deeplearning4j: the higher
// number wins. Throws ConfigError when cuda is asked for and not available, naming why.
BackendKind resolve_backend(const Config& config);

// A backend instance for worker `worker` (on GPU `worker mod devices` for CUDA).
std::unique_ptr<Backend> make_backend(BackendKind kind, const Config& config, int worker);

// For the start of a run: which device each worker runs on (empty for the CPU backend).
std::string describe_worker_placement(BackendKind kind, const Config& config);

}  // namespace dl
