// Launchers for the activation kernels (activation.cu); the semantics are the op contract's
// (backend/ops/activation.hpp): backward takes the forward input x (null allowed where the
// gradient reads only y) and output y, softmax works per row, and both directions may run in
// place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/kinds.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

void launch_activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                               float* y, const LaunchLimits& limits, cudaStream_t stream);
void launch_activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                                const float* y, const float* dy, float* dx,
                                const LaunchLimits& limits, cudaStream_t stream);
// y = act(y + x) over n values; a elementwise or the identity (Backend::add_activation_forward).
void launch_add_activation_forward(Activation a, std::size_t n, const float* x, float* y,
                                   const LaunchLimits& limits, cudaStream_t stream);
// dy = act's gradient at (x, y) of dy + term (Backend::add_activation_backward).
void launch_add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                                    const float* term, float* dy, const LaunchLimits& limits,
                                    cudaStream_t stream);

}  // namespace dl::gpu
