// Launcher for the updaters (updater.cu): DL4J's rules, as backend/cpu/updater.hpp applies them,
// one fused kernel over the flat parameter buffer per updater type.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backend/ops/updater.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

// state: Nesterovs v; Adam m then v (blocks of n); RmsProp the mean square; unused for Sgd.
// Adam's step size alpha_t is computed on the host by the op contract (ops::adam_step_size).
// terms: each range's L2 and weight decay, applied in the same pass (UpdateTerms).
void launch_updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                         float* state, const UpdateTermRanges& terms, const LaunchLimits& limits,
                         cudaStream_t stream);

}  // namespace dl::gpu
