// Launchers for inverted dropout (dropout.cu). The keep decision is the op contract's
// (backend/ops/dropout.hpp), so masks equal the CPU backend's bit for bit: the key and the kept
// scale are computed on the host by the contract's functions, the rest in the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "launch_limits.hpp"

namespace dl::gpu {

void launch_dropout_forward(std::size_t n, float retain, std::uint64_t seed, std::uint64_t counter,
                            const float* x, float* y, float* mask, const LaunchLimits& limits,
                            cudaStream_t stream);
void launch_dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx,
                             const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
