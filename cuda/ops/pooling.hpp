// Launchers for 2-D pooling (pooling.cu), with the conventions of the op contract
// (backend/ops/pooling.hpp): argmax is the winner's index inside its own (n, c) input plane,
// ties go to the smallest index, a window entirely in the padding gives 0 and argmax -1, and
// average pooling divides by kernel_height * kernel_width.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/ops/pooling.hpp"
#include "core/kinds.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

void launch_pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                           std::int32_t* argmax, const LaunchLimits& limits, cudaStream_t stream);
void launch_pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* dy, float* dx,
                            const std::int32_t* argmax, const LaunchLimits& limits,
                            cudaStream_t stream);

}  // namespace dl::gpu
