// Launcher for the fused output activation + loss (output_loss.cu); the semantics are the CPU
// backend's (backend/cpu/output_loss.hpp). The loss sum stays on the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/ops/output_loss.hpp"
#include "core/kinds.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

// `partials` holds limits.max_grid doubles. A label outside [0, k) cannot be reported from the
// device without a host wait; it makes that sample's loss NaN instead, which the trainer's
// non-finite check reports.
void launch_output_loss(const OutputLoss& op, int n, int k, const float* z,
                        const std::int32_t* labels, float* out, float* dz, float grad_scale,
                        float* loss_sum, double* partials, const LaunchLimits& limits,
                        cudaStream_t stream);

// count[0] = the rows whose first largest output is at their label (Backend::count_correct),
// counted by one block and left on the device.
void launch_count_correct(int n, int k, const float* out, const std::int32_t* labels, float* count,
                          const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
