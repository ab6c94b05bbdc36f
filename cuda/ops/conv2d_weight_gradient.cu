// The data movement of the convolution's weight gradient (conv2d_weight_gradient.hpp): the
// columns and dy in channel-major order, each one grid-stride pass over its output.
#include <algorithm>

#include "cuda_check.hpp"
#include "ops/conv2d_weight_gradient.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// Index: std::uint32_t or std::size_t (with_index_type). One thread per column element.
template <typename Index>
__global__ void convolution_columns_kernel(Conv2dGeometry g, int first_sample, int samples,
                                           const float* x, float* columns) {
  const Index outputs = static_cast<Index>(g.out_height) * g.out_width;
  const Index row_length = outputs * static_cast<Index>(samples);
  const Index total = row_length * g.in_channels * g.kernel_height * g.kernel_width;
  for (Index k = first_index(); k < total; k += grid_stride()) {
    const Index row = k / row_length;
    const Index in_row = k % row_length;
    const int sample = static_cast<int>(in_row / outputs);
    const int output = static_cast<int>(in_row % outputs);
    const int j = static_cast<int>(row % g.kernel_width);
    const int i = static_cast<int>(row / g.kernel_width % g.kernel_height);
    const int c = static_cast<int>(row / g.kernel_width / g.kernel_height);
    const int ih = output / g.out_width * g.stride_height + i - g.pad_top;
    const int iw = output % g.out_width * g.stride_width + j - g.pad_left;
    const bool inside = ih >= 0 && ih < g.in_height && iw >= 0 && iw < g.in_width;
    const std::size_t plane = static_cast<std::size_t>(first_sample + sample) * g.in_channels +
                              static_cast<std::size_t>(c);
    columns[k] = inside ? x[(plane * g.in_height + ih) * g.in_width + iw] : 0.0f;
  }
}

template <typename Index>
__global__ void channel_major_kernel(Conv2dGeometry g, int first_sample, int samples,
                                     const float* dy, float* channel_major) {
  const Index outputs = static_cast<Index>(g.out_height) * g.out_width;
  const Index total = outputs * static_cast<Index>(samples) * g.out_channels;
  for (Index k = first_index(); k < total; k += grid_stride()) {
    const Index output = k % outputs;
    const Index sample = k / outputs % static_cast<Index>(samples);
    const Index channel = k / outputs / static_cast<Index>(samples);
    const std::size_t plane = static_cast<std::size_t>(first_sample + sample) * g.out_channels +
                              static_cast<std::size_t>(channel);
    channel_major[k] = dy[plane * outputs + output];
  }
}

}  // namespace

WeightGradientChunks weight_gradient_chunks(const Conv2dGeometry& g) {
  WeightGradientChunks chunks;
  if (g.batch <= 0) return chunks;
  const std::size_t outputs = static_cast<std::size_t>(g.out_height) * g.out_width;
  const std::size_t window =
      static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  const std::size_t per_sample = outputs * (window + static_cast<std::size_t>(g.out_channels));
  chunks.samples = static_cast<int>(std::clamp<std::size_t>(kWeightGradientChunkFloats / per_sample,
                                                            1, static_cast<std::size_t>(g.batch)));
  chunks.column_floats = window * outputs * static_cast<std::size_t>(chunks.samples);
  chunks.gradient_floats =
      static_cast<std::size_t>(g.out_channels) * outputs * static_cast<std::size_t>(chunks.samples);
  return chunks;
}

void launch_convolution_columns(const Conv2dGeometry& g, int first_sample, int samples,
                                const float* x, float* columns, const LaunchLimits& limits,
                                cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(samples) * g.out_height * g.out_width *
                            g.in_channels * g.kernel_height * g.kernel_width;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    convolution_columns_kernel<decltype(index)>
        <<<limits.grid(total, block), block, 0, stream>>>(g, first_sample, samples, x, columns);
    DL_CUDA_LAUNCHED(convolution_columns_kernel);
  });
}

void launch_channel_major(const Conv2dGeometry& g, int first_sample, int samples, const float* dy,
                          float* channel_major, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total =
      static_cast<std::size_t>(samples) * g.out_height * g.out_width * g.out_channels;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    channel_major_kernel<decltype(index)><<<limits.grid(total, block), block, 0, stream>>>(
        g, first_sample, samples, dy, channel_major);
    DL_CUDA_LAUNCHED(channel_major_kernel);
  });
}

}  // namespace dl::gpu
