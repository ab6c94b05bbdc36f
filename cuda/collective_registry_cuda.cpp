// The collective registry of a binary built with the CUDA backend (src/parallel/meson.build puts
// this file in place of collective_registry_host.cpp).
#include <fmt/format.h>

#include "core/error.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/hierarchical_collective.hpp"

namespace dl {

std::unique_ptr<Collective> make_collective(BackendKind kind, const Config& /*config*/,
                                            const std::vector<Backend*>& local_backends,
                                            ProcessGroup& processes) {
  const int workers = static_cast<int>(local_backends.size());
  if (kind == BackendKind::kCpu) return make_host_collective(workers, processes);
  DL_CHECK(kind == BackendKind::kCuda, "make_collective needs a resolved backend (cpu or cuda)");
  if (workers == 1 && processes.size() == 1) return std::make_unique<LocalCollective>();
  throw ConfigError(fmt::format(
      "backend cuda with {} worker(s) in each of {} process(es): the GPU collective is not built "
      "yet; set parallel.workers: 1 and run one process",
      workers, processes.size()));
}

}  // namespace dl
