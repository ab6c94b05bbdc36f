// The dense layer's bias: broadcast into y before the GEMM accumulates onto it (its gradient is
// in bias_sums.cu).
#include "cuda_check.hpp"
#include "ops/dense.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

// Index: std::uint32_t or std::size_t (with_index_type).
template <typename Index>
__global__ void broadcast_bias_rows_kernel(int rows, int cols, const float* b, float* y) {
  const Index total = static_cast<Index>(rows) * cols;
  const Index row = static_cast<Index>(cols);
  for (Index i = first_index(); i < total; i += grid_stride()) y[i] = b[i % row];
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_broadcast_bias_rows(int rows, int cols, const float* b, float* y,
                                const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(rows) * cols;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    broadcast_bias_rows_kernel<decltype(index)>
        <<<limits.grid(total, block), block, 0, stream>>>(rows, cols, b, y);
    DL_CUDA_LAUNCHED(broadcast_bias_rows_kernel);
  });
}

}  // namespace dl::gpu
