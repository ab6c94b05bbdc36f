// The collective registry of a binary built with the CUDA backend (the top-level meson.build puts
// this file in place of collective_registry_host.cpp).
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "cuda_backend.hpp"
#include "gpu_collective.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/hierarchical_collective.hpp"

namespace dl {

std::unique_ptr<Collective> make_collective(BackendKind kind, const Config& config,
                                            const std::vector<Backend*>& local_backends,
                                            ProcessGroup& processes) {
  const int workers = static_cast<int>(local_backends.size());
  if (kind == BackendKind::kCpu) return make_host_collective(workers, processes);
  DL_CHECK(kind == BackendKind::kCuda, "make_collective needs a resolved backend (cpu or cuda)");
  DL_CHECK(workers >= 1, "make_collective needs at least one worker");
  const bool force_nccl = config.cuda.nccl == NcclUsage::kAlways;
  // One replica in the whole job: nothing to sum, no GPU work, no NCCL (unless asked for).
  if (workers == 1 && processes.size() == 1 && !force_nccl) {
    return std::make_unique<LocalCollective>();
  }
  std::vector<gpu::GpuParticipant> participants;
  for (Backend* backend : local_backends) {
    const auto* cuda = dynamic_cast<const gpu::CudaBackend*>(backend);
    DL_CHECK(cuda != nullptr, "backend cuda made a worker backend that is not a CudaBackend");
    participants.push_back({cuda->device(), cuda->stream()});
  }
  gpu::LaunchLimits limits;
  limits.max_grid = config.cuda.maximumGridSize;
  limits.max_block = config.cuda.maximumBlockSize;
  return std::make_unique<gpu::GpuCollective>(
      std::move(participants), processes, limits,
      force_nccl ? gpu::NcclUse::kAlways : gpu::NcclUse::kWhenNeeded,
      std::chrono::seconds(config.parallel.timeout));
}

}  // namespace dl
