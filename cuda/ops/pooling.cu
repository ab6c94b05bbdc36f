// 2-D max and average pooling with own kernels rather than cuDNN: cuDNN does not return the
// argmax, and its tie-breaking and padded-window rules are not the CPU backend's.
// Forward: one thread per output. Backward: one thread per *input*, gathering from the outputs
// whose windows cover it, in a fixed order; no atomics, so overlapping windows still give
// deterministic gradients.
#include "cuda_check.hpp"
#include "ops/kernel_support.cuh"
#include "ops/pooling.hpp"

namespace dl::gpu {

namespace {

constexpr std::int32_t kNoWinner = -1;

// The input rows [begin, end) of window `o` along one axis, clipped to the input.
struct Span {
  int begin, end;
};
__device__ Span window_span(int o, int stride, int pad, int kernel, int size) {
  const int start = o * stride - pad;
  return {max(start, 0), min(start + kernel, size)};
}

// The outputs [first, last] along one axis whose windows contain input position i.
__device__ Span covering_outputs(int i, int stride, int pad, int kernel, int out_size) {
  const int lowest_start = i + pad - kernel + 1;  // o * stride must be >= this
  const int first = lowest_start <= 0 ? 0 : (lowest_start + stride - 1) / stride;
  const int last = min((i + pad) / stride, out_size - 1);
  return {first, last};
}

// Output elements of all planes.
__device__ std::size_t output_count(const PoolDims& d) {
  return static_cast<std::size_t>(d.out_height) * d.out_width * d.planes;
}

// Output element o (plane-major): where its input plane starts and the window's input rows and
// columns, padding cut off.
struct OutputWindow {
  std::size_t plane_offset;
  Span rows, cols;
};
__device__ OutputWindow output_window(const PoolDims& d, std::size_t o) {
  const std::size_t out_plane = static_cast<std::size_t>(d.out_height) * d.out_width;
  const int oh = static_cast<int>(o % out_plane) / d.out_width;
  const int ow = static_cast<int>(o % out_plane) % d.out_width;
  return {(o / out_plane) * d.in_height * d.in_width,
          window_span(oh, d.stride_height, d.pad_top, d.kernel_height, d.in_height),
          window_span(ow, d.stride_width, d.pad_left, d.kernel_width, d.in_width)};
}

// ---- kernels ----------------------------------------------------------------------------------

__global__ void max_pool_forward_kernel(PoolDims d, const float* x, float* y,
                                        std::int32_t* argmax) {
  const std::size_t total = output_count(d);
  for (std::size_t o = first_index(); o < total; o += grid_stride()) {
    const OutputWindow win = output_window(d, o);
    const float* xp = x + win.plane_offset;
    const Span rows = win.rows, cols = win.cols;
    float best = 0.0f;
    std::int32_t where = kNoWinner;
    // Row-major visit, strictly greater wins: the smallest index keeps a tie.
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int iw = cols.begin; iw < cols.end; ++iw) {
        const float v = xp[ih * d.in_width + iw];
        if (where == kNoWinner || v > best) {
          best = v;
          where = ih * d.in_width + iw;
        }
      }
    }
    y[o] = best;
    argmax[o] = where;
  }
}

__global__ void avg_pool_forward_kernel(PoolDims d, float scale, const float* x, float* y) {
  const std::size_t total = output_count(d);
  for (std::size_t o = first_index(); o < total; o += grid_stride()) {
    const OutputWindow win = output_window(d, o);
    const float* xp = x + win.plane_offset;
    const Span rows = win.rows, cols = win.cols;
    float sum = 0.0f;
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int iw = cols.begin; iw < cols.end; ++iw) sum += xp[ih * d.in_width + iw];
    }
    y[o] = sum * scale;
  }
}

// kMax: an output passes its gradient to the input its argmax names. kAvg: every covered input
// gets dy * scale.
template <PoolingType kType>
__global__ void pool_backward_kernel(PoolDims d, float scale, const float* dy,
                                     const std::int32_t* argmax, float* dx) {
  const std::size_t in_plane = static_cast<std::size_t>(d.in_height) * d.in_width;
  const std::size_t out_plane = static_cast<std::size_t>(d.out_height) * d.out_width;
  const std::size_t total = in_plane * d.planes;
  for (std::size_t i = first_index(); i < total; i += grid_stride()) {
    const std::size_t plane = i / in_plane;
    const int index_in_plane = static_cast<int>(i % in_plane);
    const int ih = index_in_plane / d.in_width;
    const int iw = index_in_plane % d.in_width;
    const Span rows =
        covering_outputs(ih, d.stride_height, d.pad_top, d.kernel_height, d.out_height);
    const Span cols = covering_outputs(iw, d.stride_width, d.pad_left, d.kernel_width, d.out_width);
    const float* dyp = dy + plane * out_plane;
    const std::int32_t* ap = argmax + plane * out_plane;
    float sum = 0.0f;
    for (int oh = rows.begin; oh <= rows.end; ++oh) {
      for (int ow = cols.begin; ow <= cols.end; ++ow) {
        const int o = oh * d.out_width + ow;
        if constexpr (kType == PoolingType::kMax) {
          if (ap[o] == index_in_plane) sum += dyp[o];
        } else {
          sum += dyp[o] * scale;
        }
      }
    }
    dx[i] = sum;
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_pool2d_forward(const PoolDims& d, PoolingType type, const float* x, float* y,
                           std::int32_t* argmax, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t outputs =
      static_cast<std::size_t>(d.planes) * d.out_height * static_cast<std::size_t>(d.out_width);
  if (outputs == 0) return;
  const int block = limits.block();
  const int grid = limits.grid(outputs, block);
  if (type == PoolingType::kMax) {
    max_pool_forward_kernel<<<grid, block, 0, stream>>>(d, x, y, argmax);
    DL_CUDA_LAUNCHED(max_pool_forward_kernel);
  } else {
    const float scale = 1.0f / static_cast<float>(d.kernel_height * d.kernel_width);
    avg_pool_forward_kernel<<<grid, block, 0, stream>>>(d, scale, x, y);
    DL_CUDA_LAUNCHED(avg_pool_forward_kernel);
  }
}

void launch_pool2d_backward(const PoolDims& d, PoolingType type, const float* dy, float* dx,
                            const std::int32_t* argmax, const LaunchLimits& limits,
                            cudaStream_t stream) {
  const std::size_t inputs =
      static_cast<std::size_t>(d.planes) * d.in_height * static_cast<std::size_t>(d.in_width);
  if (inputs == 0) return;
  const int block = limits.block();
  const int grid = limits.grid(inputs, block);
  const float scale = 1.0f / static_cast<float>(d.kernel_height * d.kernel_width);
  if (type == PoolingType::kMax) {
    pool_backward_kernel<PoolingType::kMax><<<grid, block, 0, stream>>>(d, scale, dy, argmax, dx);
  } else {
    pool_backward_kernel<PoolingType::kAvg><<<grid, block, 0, stream>>>(d, scale, dy, argmax, dx);
  }
  DL_CUDA_LAUNCHED(pool_backward_kernel);
}

}  // namespace dl::gpu
