// Launchers for the dense layer's non-GEMM parts (dense.cu); the GEMMs are cuBLAS calls in
// cuda_backend.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include "launch_limits.hpp"

namespace dl::gpu {

// y[r][c] = b[c] for every row: y then takes the GEMM with beta = 1, which fuses the bias add
// into the product.
void launch_broadcast_bias_rows(int rows, int cols, const float* b, float* y,
                                const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
