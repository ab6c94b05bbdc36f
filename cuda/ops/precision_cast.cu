// Casts between float32 and the 16-bit formats: one grid-stride kernel per direction and format.
#include "cuda_check.hpp"
#include "ops/half_format.cuh"
#include "ops/kernel_support.cuh"
#include "ops/precision_cast.hpp"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

template <typename T>
__global__ void cast_to_half_format_kernel(std::size_t n, const float* x, T* dst) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = to_storage<T>(x[i]);
}

template <typename T>
__global__ void cast_to_float_kernel(std::size_t n, const T* src, float* dst) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = to_float(src[i]);
}

template <HalfFormat F>
void cast_to_half_format(std::size_t n, const float* x, void* dst, const LaunchLimits& limits,
                         cudaStream_t stream) {
  using T = typename HalfStorage<F>::type;
  const int block = limits.block();
  cast_to_half_format_kernel<T>
      <<<limits.grid(n, block), block, 0, stream>>>(n, x, static_cast<T*>(dst));
  DL_CUDA_LAUNCHED(cast_to_half_format_kernel);
}

template <HalfFormat F>
void cast_to_float(std::size_t n, const void* src, float* dst, const LaunchLimits& limits,
                   cudaStream_t stream) {
  using T = typename HalfStorage<F>::type;
  const int block = limits.block();
  cast_to_float_kernel<T>
      <<<limits.grid(n, block), block, 0, stream>>>(n, static_cast<const T*>(src), dst);
  DL_CUDA_LAUNCHED(cast_to_float_kernel);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_cast_to_half_format(HalfFormat f, std::size_t n, const float* x, void* dst,
                                const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0) return;
  with_half_format(f, [&](auto format) {
    cast_to_half_format<decltype(format)::value>(n, x, dst, limits, stream);
  });
}

void launch_cast_to_float(HalfFormat f, std::size_t n, const void* src, float* dst,
                          const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0) return;
  with_half_format(
      f, [&](auto format) { cast_to_float<decltype(format)::value>(n, src, dst, limits, stream); });
}

}  // namespace dl::gpu
