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

using ops::covering_outputs;
using ops::kNoArgmax;
using ops::Span;
using ops::window_span;

// Output elements of all planes.
__device__ std::size_t output_count(const Pool2dGeometry& g) {
  return static_cast<std::size_t>(g.out_height) * g.out_width * ops::pool_planes(g);
}

// Output element o (plane-major): where its input plane starts and the window's input rows and
// columns, padding cut off.
struct OutputWindow {
  std::size_t plane_offset;
  Span rows, cols;
};
// Index: std::uint32_t or std::size_t, the flat index's type (with_index_type).
template <typename Index>
__device__ OutputWindow output_window(const Pool2dGeometry& g, Index o) {
  const Index out_plane = static_cast<Index>(g.out_height) * g.out_width;
  const int in_plane = static_cast<int>(o % out_plane);
  const int oh = in_plane / g.out_width;
  const int ow = in_plane % g.out_width;
  return {static_cast<std::size_t>(o / out_plane) * g.in_height * g.in_width,
          window_span(oh, g.stride_height, g.pad_top, g.kernel_height, g.in_height),
          window_span(ow, g.stride_width, g.pad_left, g.kernel_width, g.in_width)};
}

// ---- kernels ----------------------------------------------------------------------------------

template <typename Index>
__global__ void max_pool_forward_kernel(Pool2dGeometry g, const float* x, float* y,
                                        std::int32_t* argmax) {
  const Index total = static_cast<Index>(output_count(g));
  for (Index o = first_index(); o < total; o += grid_stride()) {
    const OutputWindow win = output_window(g, o);
    const float* xp = x + win.plane_offset;
    const Span rows = win.rows, cols = win.cols;
    float best = 0.0f;
    std::int32_t where = kNoArgmax;
    // Row-major visit, strictly greater wins: the smallest index keeps a tie.
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int iw = cols.begin; iw < cols.end; ++iw) {
        const float v = xp[ih * g.in_width + iw];
        if (where == kNoArgmax || v > best) {
          best = v;
          where = ih * g.in_width + iw;
        }
      }
    }
    y[o] = best;
    argmax[o] = where;
  }
}

template <typename Index>
__global__ void avg_pool_forward_kernel(Pool2dGeometry g, float scale, const float* x, float* y) {
  const Index total = static_cast<Index>(output_count(g));
  for (Index o = first_index(); o < total; o += grid_stride()) {
    const OutputWindow win = output_window(g, o);
    const float* xp = x + win.plane_offset;
    const Span rows = win.rows, cols = win.cols;
    float sum = 0.0f;
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int iw = cols.begin; iw < cols.end; ++iw) sum += xp[ih * g.in_width + iw];
    }
    y[o] = sum * scale;
  }
}

// kMax: an output passes its gradient to the input its argmax names. kAvg: every covered input
// gets dy * scale.
template <PoolingType kType, typename Index>
__global__ void pool_backward_kernel(Pool2dGeometry g, float scale, const float* dy,
                                     const std::int32_t* argmax, float* dx) {
  const Index in_plane = static_cast<Index>(g.in_height) * g.in_width;
  const std::size_t out_plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  const Index total = in_plane * ops::pool_planes(g);
  for (Index i = first_index(); i < total; i += grid_stride()) {
    const std::size_t plane = i / in_plane;
    const int index_in_plane = static_cast<int>(i % in_plane);
    const int ih = index_in_plane / g.in_width;
    const int iw = index_in_plane % g.in_width;
    const Span rows =
        covering_outputs(ih, g.stride_height, g.pad_top, g.kernel_height, g.out_height);
    const Span cols = covering_outputs(iw, g.stride_width, g.pad_left, g.kernel_width, g.out_width);
    const float* dyp = dy + plane * out_plane;
    const std::int32_t* ap = argmax + plane * out_plane;
    float sum = 0.0f;
    for (int oh = rows.begin; oh <= rows.end; ++oh) {
      for (int ow = cols.begin; ow <= cols.end; ++ow) {
        const int o = oh * g.out_width + ow;
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

void launch_pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                           std::int32_t* argmax, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t outputs = static_cast<std::size_t>(ops::pool_planes(g)) * g.out_height *
                              static_cast<std::size_t>(g.out_width);
  if (outputs == 0) return;
  const int block = limits.block();
  const int grid = limits.grid(outputs, block);
  with_index_type(outputs, [&](auto index) {
    using Index = decltype(index);
    if (type == PoolingType::kMax) {
      max_pool_forward_kernel<Index><<<grid, block, 0, stream>>>(g, x, y, argmax);
      DL_CUDA_LAUNCHED(max_pool_forward_kernel);
    } else {
      const float scale = ops::avg_pool_scale(g);
      avg_pool_forward_kernel<Index><<<grid, block, 0, stream>>>(g, scale, x, y);
      DL_CUDA_LAUNCHED(avg_pool_forward_kernel);
    }
  });
}

void launch_pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* dy, float* dx,
                            const std::int32_t* argmax, const LaunchLimits& limits,
                            cudaStream_t stream) {
  const std::size_t inputs = static_cast<std::size_t>(ops::pool_planes(g)) * g.in_height *
                             static_cast<std::size_t>(g.in_width);
  if (inputs == 0) return;
  const int block = limits.block();
  const int grid = limits.grid(inputs, block);
  const float scale = ops::avg_pool_scale(g);
  with_index_type(inputs, [&](auto index) {
    using Index = decltype(index);
    if (type == PoolingType::kMax) {
      pool_backward_kernel<PoolingType::kMax, Index>
          <<<grid, block, 0, stream>>>(g, scale, dy, argmax, dx);
    } else {
      pool_backward_kernel<PoolingType::kAvg, Index>
          <<<grid, block, 0, stream>>>(g, scale, dy, argmax, dx);
    }
    DL_CUDA_LAUNCHED(pool_backward_kernel);
  });
}

}  // namespace dl::gpu
