// The convolution's own kernels around cuDNN's forward: explicit zero padding for padding cuDNN
// cannot express, and the bias add (the bias gradient is in bias_sums.cu; the backward pass in
// conv2d_columns.cu). Padding and bias are templates over the element types on each side, so the
// mixed-precision path converts to or from 16-bit in the same pass (float -> float
// instantiations are the float32 path).
#include "cuda_check.hpp"
#include "ops/conv2d.hpp"
#include "ops/half_format.cuh"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

// Index: std::uint32_t or std::size_t, the flat index's type (with_index_type).
template <typename Out, typename Index>
__global__ void pad_planes_kernel(PlaneDims x_dims, PlaneDims padded_dims, int pad_top,
                                  int pad_left, const float* x, Out* padded) {
  const Index plane_size = static_cast<Index>(padded_dims.height) * padded_dims.width;
  const Index total = plane_size * padded_dims.planes;
  for (Index i = first_index(); i < total; i += grid_stride()) {
    const std::size_t plane = i / plane_size;
    const int in_plane = static_cast<int>(i % plane_size);
    const int h = in_plane / padded_dims.width - pad_top;
    const int w = in_plane % padded_dims.width - pad_left;
    const bool inside = h >= 0 && h < x_dims.height && w >= 0 && w < x_dims.width;
    padded[i] = to_storage<Out>(
        inside ? x[(plane * x_dims.height + h) * static_cast<std::size_t>(x_dims.width) + w]
               : 0.0f);
  }
}

// y[i] = src[i] + b[channel of i]; src may be y itself (float32 path: read, then write, the same
// element in the same thread).
template <typename In, typename Index>
__global__ void add_channel_bias_kernel(int batch, int channels, int spatial, const In* src,
                                        const float* b, float* y) {
  const Index total = static_cast<Index>(batch) * channels * spatial;
  const Index plane = static_cast<Index>(spatial), planes = static_cast<Index>(channels);
  for (Index i = first_index(); i < total; i += grid_stride())
    y[i] = to_float(src[i]) + b[(i / plane) % planes];
}

template <typename Out>
void pad_planes(PlaneDims x_dims, PlaneDims padded_dims, int pad_top, int pad_left, const float* x,
                Out* padded, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total =
      static_cast<std::size_t>(padded_dims.planes) * padded_dims.height * padded_dims.width;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    pad_planes_kernel<Out, decltype(index)><<<limits.grid(total, block), block, 0, stream>>>(
        x_dims, padded_dims, pad_top, pad_left, x, padded);
    DL_CUDA_LAUNCHED(pad_planes_kernel);
  });
}

template <typename In>
void add_channel_bias(int batch, int channels, int spatial, const In* src, const float* b, float* y,
                      const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(batch) * channels * spatial;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    add_channel_bias_kernel<In, decltype(index)>
        <<<limits.grid(total, block), block, 0, stream>>>(batch, channels, spatial, src, b, y);
    DL_CUDA_LAUNCHED(add_channel_bias_kernel);
  });
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_pad_planes(PlaneDims x_dims, PlaneDims padded_dims, int pad_top, int pad_left,
                       const float* x, float* padded, const LaunchLimits& limits,
                       cudaStream_t stream) {
  pad_planes(x_dims, padded_dims, pad_top, pad_left, x, padded, limits, stream);
}

void launch_pad_planes_to_half_format(HalfFormat f, PlaneDims x_dims, PlaneDims padded_dims,
                                      int pad_top, int pad_left, const float* x, void* padded,
                                      const LaunchLimits& limits, cudaStream_t stream) {
  with_half_format(f, [&](auto format) {
    using T = StorageOf<decltype(format)>;
    pad_planes(x_dims, padded_dims, pad_top, pad_left, x, static_cast<T*>(padded), limits, stream);
  });
}

void launch_add_channel_bias(int batch, int channels, int spatial, const float* b, float* y,
                             const LaunchLimits& limits, cudaStream_t stream) {
  add_channel_bias<float>(batch, channels, spatial, y, b, y, limits, stream);
}

void launch_add_channel_bias_from_half_format(HalfFormat f, int batch, int channels, int spatial,
                                              const void* y16, const float* b, float* y,
                                              const LaunchLimits& limits, cudaStream_t stream) {
  with_half_format(f, [&](auto format) {
    using T = StorageOf<decltype(format)>;
    add_channel_bias(batch, channels, spatial, static_cast<const T*>(y16), b, y, limits, stream);
  });
}

}  // namespace dl::gpu
