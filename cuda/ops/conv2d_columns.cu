// The data movement of the convolution's backward pass by columns (conv2d_columns.hpp): the
// columns, dy in channel-major order and the columns' gradient back to images, each one grid-stride
// pass over its output.
#include <algorithm>

#include "cuda_check.hpp"
#include "ops/conv2d_columns.hpp"
#include "ops/half_format.cuh"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// Out: float, or a 16-bit storage type (rounded to nearest even) for mixed precision. Index:
// std::uint32_t or std::size_t (with_index_type). One thread per column element.
template <typename Out, typename Index>
__global__ void convolution_columns_kernel(Conv2dGeometry g, int first_sample, int samples,
                                           const float* x, Out* columns) {
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
    columns[k] = to_storage<Out>(inside ? x[(plane * g.in_height + ih) * g.in_width + iw] : 0.0f);
  }
}

// The window positions t (rows or columns) that read input position `at` (already shifted by
// the padding): t = at - o * stride for outputs o in [0, outputs), 0 <= t < kernel; from the
// smallest t (the largest o) up. Empty when first > last.
struct WindowSpan {
  int first = 0, last = -1, first_output = 0;
};
__device__ inline WindowSpan window_span(int at, int stride, int outputs, int kernel) {
  WindowSpan span;
  int o = at / stride;  // the largest output whose window starts at or before `at`
  if (o > outputs - 1) o = outputs - 1;
  span.first = at - o * stride;
  span.first_output = o;
  span.last = at < kernel - 1 ? at : kernel - 1;
  if (span.first >= kernel) span.last = span.first - 1;  // no window reaches `at`
  return span;
}

// dx[first_sample + s][c][ih][iw] = sum over the window positions (i, j) that read (ih, iw), i
// then j ascending, of column_gradient[(c, i, j)][(s, oh, ow)]: a gather per input value, so the
// order of the additions is fixed.
template <typename Index>
__global__ void columns_to_image_kernel(Conv2dGeometry g, int first_sample, int samples,
                                        const float* column_gradient, float* dx) {
  const Index plane = static_cast<Index>(g.in_height) * g.in_width;
  const Index total = plane * g.in_channels * static_cast<Index>(samples);
  const int outputs = g.out_height * g.out_width;
  const std::size_t row_length = static_cast<std::size_t>(outputs) * samples;
  for (Index k = first_index(); k < total; k += grid_stride()) {
    const int iw = static_cast<int>(k % g.in_width);
    const int ih = static_cast<int>(k / g.in_width % g.in_height);
    const int c = static_cast<int>(k / plane % g.in_channels);
    const int s = static_cast<int>(k / plane / g.in_channels);
    // The window rows i that read ih are those with ih + pad_top - i a multiple of the stride in
    // [0, (out_height - 1) * stride]: one arithmetic progression, walked upwards (and columns j
    // alike), so nothing is divided per window position.
    const WindowSpan rows =
        window_span(ih + g.pad_top, g.stride_height, g.out_height, g.kernel_height);
    const WindowSpan cols =
        window_span(iw + g.pad_left, g.stride_width, g.out_width, g.kernel_width);
    const float* sample_columns = column_gradient + static_cast<std::size_t>(s) * outputs;
    float sum = 0.0f;
    for (int i = rows.first, oh = rows.first_output; i <= rows.last; i += g.stride_height, --oh) {
      for (int j = cols.first, ow = cols.first_output; j <= cols.last; j += g.stride_width, --ow) {
        const std::size_t row =
            (static_cast<std::size_t>(c) * g.kernel_height + i) * g.kernel_width + j;
        sum += sample_columns[row * row_length + oh * g.out_width + ow];
      }
    }
    dx[static_cast<std::size_t>(first_sample) * g.in_channels * plane + k] = sum;
  }
}

template <typename Out, typename Index>
__global__ void channel_major_kernel(Conv2dGeometry g, int first_sample, int samples,
                                     const float* dy, Out* channel_major) {
  const Index outputs = static_cast<Index>(g.out_height) * g.out_width;
  const Index total = outputs * static_cast<Index>(samples) * g.out_channels;
  for (Index k = first_index(); k < total; k += grid_stride()) {
    const Index output = k % outputs;
    const Index sample = k / outputs % static_cast<Index>(samples);
    const Index channel = k / outputs / static_cast<Index>(samples);
    const std::size_t plane = static_cast<std::size_t>(first_sample + sample) * g.out_channels +
                              static_cast<std::size_t>(channel);
    channel_major[k] = to_storage<Out>(dy[plane * outputs + output]);
  }
}

}  // namespace

ColumnChunks column_chunks(const Conv2dGeometry& g) {
  ColumnChunks chunks;
  if (g.batch <= 0) return chunks;
  const std::size_t outputs = static_cast<std::size_t>(g.out_height) * g.out_width;
  const std::size_t window =
      static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  const std::size_t per_sample = outputs * (window + static_cast<std::size_t>(g.out_channels));
  chunks.samples = static_cast<int>(std::clamp<std::size_t>(kColumnChunkFloats / per_sample, 1,
                                                            static_cast<std::size_t>(g.batch)));
  chunks.column_floats = window * outputs * static_cast<std::size_t>(chunks.samples);
  chunks.gradient_floats =
      static_cast<std::size_t>(g.out_channels) * outputs * static_cast<std::size_t>(chunks.samples);
  chunks.weight_floats = window * static_cast<std::size_t>(g.out_channels);
  return chunks;
}

namespace {

template <typename Out>
void convolution_columns(const Conv2dGeometry& g, int first_sample, int samples, const float* x,
                         Out* columns, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(samples) * g.out_height * g.out_width *
                            g.in_channels * g.kernel_height * g.kernel_width;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    convolution_columns_kernel<Out, decltype(index)>
        <<<limits.grid(total, block), block, 0, stream>>>(g, first_sample, samples, x, columns);
    DL_CUDA_LAUNCHED(convolution_columns_kernel);
  });
}

template <typename Out>
void channel_major(const Conv2dGeometry& g, int first_sample, int samples, const float* dy,
                   Out* reordered, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t total =
      static_cast<std::size_t>(samples) * g.out_height * g.out_width * g.out_channels;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    channel_major_kernel<Out, decltype(index)>
        <<<limits.grid(total, block), block, 0, stream>>>(g, first_sample, samples, dy, reordered);
    DL_CUDA_LAUNCHED(channel_major_kernel);
  });
}

}  // namespace

void launch_columns_to_image(const Conv2dGeometry& g, int first_sample, int samples,
                             const float* column_gradient, float* dx, const LaunchLimits& limits,
                             cudaStream_t stream) {
  const std::size_t total =
      static_cast<std::size_t>(samples) * g.in_channels * g.in_height * g.in_width;
  if (total == 0) return;
  const int block = limits.block();
  with_index_type(total, [&](auto index) {
    columns_to_image_kernel<decltype(index)><<<limits.grid(total, block), block, 0, stream>>>(
        g, first_sample, samples, column_gradient, dx);
    DL_CUDA_LAUNCHED(columns_to_image_kernel);
  });
}

void launch_convolution_columns(const Conv2dGeometry& g, int first_sample, int samples,
                                const float* x, float* columns, const LaunchLimits& limits,
                                cudaStream_t stream) {
  convolution_columns(g, first_sample, samples, x, columns, limits, stream);
}

void launch_channel_major(const Conv2dGeometry& g, int first_sample, int samples, const float* dy,
                          float* reordered, const LaunchLimits& limits, cudaStream_t stream) {
  channel_major(g, first_sample, samples, dy, reordered, limits, stream);
}

void launch_convolution_columns_to_half_format(HalfFormat f, const Conv2dGeometry& g,
                                               int first_sample, int samples, const float* x,
                                               void* columns, const LaunchLimits& limits,
                                               cudaStream_t stream) {
  with_half_format(f, [&](auto format) {
    using T = StorageOf<decltype(format)>;
    convolution_columns(g, first_sample, samples, x, static_cast<T*>(columns), limits, stream);
  });
}

void launch_channel_major_to_half_format(HalfFormat f, const Conv2dGeometry& g, int first_sample,
                                         int samples, const float* dy, void* reordered,
                                         const LaunchLimits& limits, cudaStream_t stream) {
  with_half_format(f, [&](auto format) {
    using T = StorageOf<decltype(format)>;
    channel_major(g, first_sample, samples, dy, static_cast<T*>(reordered), limits, stream);
  });
}

}  // namespace dl::gpu
