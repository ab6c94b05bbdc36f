// Inverted dropout with the counter-based mask of the op contract (backend/ops/dropout.hpp). Each
// element's decision depends only on (key, i), so the grid shape does not matter and the mask
// equals the CPU's exactly: integer hashing, an exact int-to-float conversion of 24 bits, a
// multiplication by a power of two, and one float comparison, none of which can round differently
// on the GPU.
#include "backend/ops/dropout.hpp"
#include "cuda_check.hpp"
#include "ops/dropout.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

__global__ void dropout_forward_kernel(std::size_t n, float retain, float kept_scale,
                                       std::uint64_t key, const float* x, float* y, float* mask) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float m = ops::dropout_uniform_from_key(key, i) < retain ? kept_scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void dropout_backward_kernel(std::size_t n, const float* mask, const float* dy,
                                        float* dx) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) dx[i] = dy[i] * mask[i];
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_dropout_forward(std::size_t n, float retain, std::uint64_t seed, std::uint64_t counter,
                            const float* x, float* y, float* mask, const LaunchLimits& limits,
                            cudaStream_t stream) {
  if (n == 0) return;
  const std::uint64_t key = ops::dropout_key(seed, counter);
  const float kept_scale = ops::dropout_kept_scale(retain);
  const int block = limits.block();
  dropout_forward_kernel<<<limits.grid(n, block), block, 0, stream>>>(n, retain, kept_scale, key, x,
                                                                      y, mask);
  DL_CUDA_LAUNCHED(dropout_forward_kernel);
}

void launch_dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx,
                             const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0) return;
  const int block = limits.block();
  dropout_backward_kernel<<<limits.grid(n, block), block, 0, stream>>>(n, mask, dy, dx);
  DL_CUDA_LAUNCHED(dropout_backward_kernel);
}

}  // namespace dl::gpu
