// Gradient normalization: element-wise clipping and scaling to a norm read from a device scalar,
// with the CPU backend's math (backend/gradient_clip_math.hpp), so both produce the same bits.
#include "backend/gradient_clip_math.hpp"
#include "cuda_check.hpp"
#include "ops/gradient_clip.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

__global__ void clip_values_kernel(std::size_t n, float limit, float* x) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) x[i] = clip_value(x[i], limit);
}

// Every thread computes the same factor from the scalar: cheaper than a separate kernel and a
// second scalar for it.
__global__ void scale_to_norm_kernel(std::size_t n, const float* sum_of_squares, float threshold,
                                     bool always, float* x) {
  const float factor = norm_scale_factor(sum_of_squares[0], threshold, always);
  if (factor == 1.0f) return;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) x[i] *= factor;
}

}  // namespace

void launch_clip_values(std::size_t n, float limit, float* x, const LaunchLimits& limits,
                        cudaStream_t stream) {
  if (n == 0) return;
  const int block = limits.block();
  clip_values_kernel<<<limits.grid(n, block), block, 0, stream>>>(n, limit, x);
  DL_CUDA_LAUNCHED(clip_values_kernel);
}

void launch_scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold, bool always,
                          float* x, const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0) return;
  const int block = limits.block();
  scale_to_norm_kernel<<<limits.grid(n, block), block, 0, stream>>>(n, sum_of_squares, threshold,
                                                                    always, x);
  DL_CUDA_LAUNCHED(scale_to_norm_kernel);
}

}  // namespace dl::gpu
