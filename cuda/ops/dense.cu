// The dense layer's bias: broadcast into y before the GEMM accumulates onto it (its gradient is
// in bias_sums.cu).
#include "cuda_check.hpp"
#include "ops/dense.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

__global__ void broadcast_bias_rows_kernel(int rows, int cols, const float* b, float* y) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) y[i] = b[i % cols];
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_broadcast_bias_rows(int rows, int cols, const float* b, float* y,
                                const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  if (total == 0) return;
  const int block = limits.block();
  broadcast_bias_rows_kernel<<<limits.grid(total, block), block, 0, stream>>>(rows, cols, b, y);
  DL_CUDA_LAUNCHED(broadcast_bias_rows_kernel);
}

}  // namespace dl::gpu
