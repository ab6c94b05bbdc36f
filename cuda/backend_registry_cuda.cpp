// The backend registry of a binary built with the CUDA backend (the top-level meson.build puts
// this file in place of src/backend/backend_registry_cpu_only.cpp).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend_selection.hpp"
#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "cuda_backend.hpp"
#include "device_query.hpp"

namespace dl {

BackendAvailability backend_availability() {
  BackendAvailability a;
  a.cuda_built = true;
  gpu::DeviceScan scan = gpu::scan_devices();
  a.devices = std::move(scan.devices);
  // BackendAvailability has no field for the reason; `dl-train info` prints these lines as they
  // are, so the reason leads them.
  if (a.devices.empty()) a.library_versions.push_back("no device visible: " + scan.problem);
  for (std::string& v : gpu::library_versions()) a.library_versions.push_back(std::move(v));
  return a;
}

namespace {

// backend: auto fell back to the CPU, which trains in FLOAT only: a HALF or BFLOAT16 config must
// not silently train in fp32.
BackendChoice cpu_for_auto(const Config& config, const std::string& why) {
  if (config.dtype != DType::kFloat) {
    throw ConfigError(fmt::format(
        "{}: backend: auto chose the CPU because {}, and dtype {} needs the CUDA backend; set "
        "dtype: FLOAT to train on the CPU, or run where a GPU is visible",
        config.sourcePath, why, enum_name(config.dtype)));
  }
  return {BackendKind::kCpu, why};
}

}  // namespace

BackendChoice choose_backend(const Config& config) {
  switch (config.backend) {
    case BackendKind::kCpu:
      return {BackendKind::kCpu, ""};
    case BackendKind::kCuda: {
      const gpu::DeviceScan scan = gpu::scan_devices();
      gpu::devices_for_run(config, static_cast<int>(scan.devices.size()), scan.problem);
      return {BackendKind::kCuda, ""};
    }
    case BackendKind::kAuto: {
      const gpu::BackendPriorities priorities = gpu::priorities_from_environment();
      if (priorities.gpu <= priorities.cpu) {
        return cpu_for_auto(config,
                            fmt::format("BACKEND_PRIORITY_CPU {} >= BACKEND_PRIORITY_GPU {}",
                                        priorities.cpu, priorities.gpu));
      }
      const gpu::DeviceScan scan = gpu::scan_devices();
      const int visible = static_cast<int>(scan.devices.size());
      if (!gpu::auto_takes_gpu(priorities, visible)) {
        return cpu_for_auto(config, scan.summary.empty() ? "no GPU found" : scan.summary);
      }
      gpu::devices_for_run(config, visible, scan.problem);  // a listed device must exist
      return {BackendKind::kCuda, ""};
    }
  }
  return {BackendKind::kCpu, ""};
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const Config& config, int worker,
                                      const GpuNeighbours& neighbours) {
  if (kind == BackendKind::kCpu) return std::make_unique<CpuBackend>();
  DL_CHECK(kind == BackendKind::kCuda, "make_backend needs a resolved backend (cpu or cuda)");
  DL_CHECK(worker >= 0, "worker index must not be negative");
  const gpu::DeviceScan scan = gpu::scan_devices();
  const std::vector<int> devices = gpu::devices_for_process(
      config, static_cast<int>(scan.devices.size()), neighbours, scan.problem);
  gpu::CacheShares shares;
  shares.workers_on_device = gpu::workers_sharing_device(config, devices.size(), worker);
  shares.workers_in_process = std::max(config.parallel.workers, 1);
  return std::make_unique<gpu::CudaBackend>(
      config, devices[static_cast<std::size_t>(worker) % devices.size()], shares);
}

std::string describe_worker_placement(BackendKind kind, const Config& config,
                                      const GpuNeighbours& neighbours) {
  if (kind != BackendKind::kCuda) return {};
  const gpu::DeviceScan scan = gpu::scan_devices();
  const int visible = static_cast<int>(scan.devices.size());
  const std::vector<int> devices =
      gpu::devices_for_process(config, visible, neighbours, scan.problem);
  return gpu::describe_process_share(config, visible, neighbours, devices) +
         gpu::describe_worker_placement(config, devices);
}

}  // namespace dl
