// The collective registry of a binary without the CUDA backend: every replica is in host memory.
#include "core/error.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/hierarchical_collective.hpp"

namespace dl {

std::unique_ptr<Collective> make_collective(BackendKind kind, const Config& /*config*/,
                                            const std::vector<Backend*>& local_backends,
                                            ProcessGroup& processes) {
  DL_CHECK(kind == BackendKind::kCpu, "this binary has only the CPU backend");
  return make_host_collective(static_cast<int>(local_backends.size()), processes);
}

}  // namespace dl
