// Launchers for the gradient-normalization kernels (gradient_clip.cu; contract in
// backend/backend.hpp, math in backend/gradient_clip_math.hpp). Both run asynchronously on
// `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "launch_limits.hpp"

namespace dl::gpu {

void launch_clip_values(std::size_t n, float limit, float* x, const LaunchLimits& limits,
                        cudaStream_t stream);
// sum_of_squares: a device scalar, read by the kernel (no host round trip).
void launch_scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold, bool always,
                          float* x, const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
