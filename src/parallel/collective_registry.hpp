// Which collective a run's workers use, chosen by where their replicas live. The build chooses
// the implementation file, as for the backend registry: collective_registry_host.cpp, or
// cuda/collective_registry_cuda.cpp when the CUDA backend is built (no #ifdef decides it).
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "parallel/collective.hpp"
#include "parallel/process_group.hpp"

namespace dl {

// The collective among this process's workers (`local_backends[w]` is local worker w's backend,
// all of kind `kind`) and the workers of the job's other processes:
//  - cpu: threads within the process, the ProcessGroup (MPI) between processes;
//  - cuda: device buffers summed on the GPU; NCCL between GPUs and processes.
// Throws ConfigError when the combination cannot be served by this binary.
std::unique_ptr<Collective> make_collective(BackendKind kind, const Config& config,
                                            const std::vector<Backend*>& local_backends,
                                            ProcessGroup& processes);

}  // namespace dl
