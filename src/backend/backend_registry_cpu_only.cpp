// The backend registry of a binary built without CUDA: the CPU backend only.
#include <cstdlib>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "config/enum_names.hpp"
#include "core/error.hpp"

namespace dl {

BackendAvailability backend_availability() {
  return BackendAvailability{};
}

BackendChoice choose_backend(const Config& config) {
  if (config.backend == BackendKind::kCuda) {
    throw ConfigError(config.sourcePath +
                      ": backend: cuda, but this dl-train was built without the CUDA backend; "
                      "set backend: cpu (or auto), or rebuild with -Dcuda=enabled on a machine "
                      "with the CUDA toolkit, cuDNN and NCCL");
  }
  if (config.backend == BackendKind::kAuto && config.dtype != DType::kFloat) {
    throw ConfigError(fmt::format(
        "{}: backend: auto means the CPU in this dl-train (built without the CUDA backend), and "
        "dtype {} needs the CUDA backend; set dtype: FLOAT, or rebuild with -Dcuda=enabled",
        config.sourcePath, enum_name(config.dtype)));
  }
  BackendChoice choice;
  if (config.backend == BackendKind::kAuto) {
    choice.why_not_gpu = "built without the CUDA backend";
  }
  return choice;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const Config& /*config*/, int /*worker*/,
                                      const GpuNeighbours& /*neighbours*/) {
  DL_CHECK(kind == BackendKind::kCpu, "only the CPU backend is built into this binary");
  return std::make_unique<CpuBackend>();
}

std::string describe_worker_placement(BackendKind /*kind*/, const Config& /*config*/,
                                      const GpuNeighbours& /*neighbours*/) {
  return {};
}

}  // namespace dl
