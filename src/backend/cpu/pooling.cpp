#include "backend/cpu/pooling.hpp"

#include <algorithm>
#include <limits>

#include "backend/cpu/pooling_tiled.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/ops/pooling.hpp"

// argmax convention: for each output element, the index of the winning input inside its own
// (n, c) input plane, ih * in_width + iw. Among equal maxima the smallest index (the first in
// row-major order) wins. A window that lies entirely in the padding has no winner: its output is
// 0 and its argmax is ops::kNoArgmax (backend/ops/pooling.hpp), which backward skips.
//
// Two paths:
//  - Tiled: windows that tile the input without overlap or padding (stride == kernel, LeNet's
//    2x2 stride 2). Rows are short (LeNet: 24 and 8 inputs), too short for a per-row loop to
//    vectorize well, so a block of window rows from consecutive planes is reduced in two passes:
//    down the kernel rows, one contiguous input row at a time, into a small stack buffer whose
//    rows hold only the covered columns; then across the kernel columns in one flat loop over the
//    whole block, since kernel_width consecutive buffer entries form one window and the block's
//    outputs are contiguous in y. Backward runs the same two passes in reverse.
//  - General (overlap, padding): each output row is split into border columns (the window crosses
//    the left or right padding), handled one element at a time, and interior columns, where the
//    kernel offsets are the outer loops and the output columns the inner, branch-free loop.

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using pooling_detail::avg_backward_tiled;
using pooling_detail::avg_forward_tiled;
using pooling_detail::Counts;
using pooling_detail::counts_of;
using pooling_detail::max_backward_tiled;
using pooling_detail::max_forward_tiled;
using pooling_detail::windows_tile_input;

// ---- general path -----------------------------------------------------------------------------

// Output columns [lo, hi) whose whole window [ow*stride - pad, ow*stride - pad + kernel) lies
// inside [0, width).
struct Interior {
  int lo = 0, hi = 0;
};
Interior interior_columns(const Pool2dGeometry& g) {
  const int s = g.stride_width;
  int lo = (g.pad_left + s - 1) / s;
  const int last_start = g.in_width - g.kernel_width + g.pad_left;  // ow*s <= last_start
  int hi = last_start < 0 ? 0 : last_start / s + 1;
  lo = std::min(lo, g.out_width);
  hi = std::clamp(hi, lo, g.out_width);
  return {lo, hi};
}

// The input rows of output row oh's window that are inside the input.
struct RowSpan {
  int begin = 0, end = 0;
};
RowSpan window_rows(const Pool2dGeometry& g, int oh) {
  const int start = oh * g.stride_height - g.pad_top;
  return {std::max(start, 0), std::min(start + g.kernel_height, g.in_height)};
}

void max_element_at(const Pool2dGeometry& g, const float* x, RowSpan rows, int ow, float* y,
                    std::int32_t* argmax) {
  const int start = ow * g.stride_width - g.pad_left;
  const int cb = std::max(start, 0), ce = std::min(start + g.kernel_width, g.in_width);
  float best = -std::numeric_limits<float>::infinity();
  std::int32_t where = ops::kNoArgmax;
  for (int ih = rows.begin; ih < rows.end; ++ih) {
    for (int iw = cb; iw < ce; ++iw) {
      const float v = x[ih * g.in_width + iw];
      if (where == ops::kNoArgmax || v > best) {
        best = v;
        where = ih * g.in_width + iw;
      }
    }
  }
  *y = where == ops::kNoArgmax ? 0.0f : best;
  *argmax = where;
}

void max_plane(const Pool2dGeometry& g, const Interior& in, const float* __restrict x,
               float* __restrict y, std::int32_t* __restrict argmax) {
  const int W = g.in_width, OW = g.out_width, sw = g.stride_width;
  for (int oh = 0; oh < g.out_height; ++oh) {
    const RowSpan rows = window_rows(g, oh);
    float* __restrict yr = y + oh * OW;
    std::int32_t* __restrict ar = argmax + oh * OW;
    for (int ow = 0; ow < in.lo; ++ow) max_element_at(g, x, rows, ow, yr + ow, ar + ow);
    for (int ow = in.hi; ow < OW; ++ow) max_element_at(g, x, rows, ow, yr + ow, ar + ow);
    if (in.lo == in.hi) continue;
    if (rows.begin >= rows.end) {
      for (int ow = in.lo; ow < in.hi; ++ow) {
        yr[ow] = 0.0f;
        ar[ow] = ops::kNoArgmax;
      }
      continue;
    }
    // Seed with the window's first valid cell, then let later cells win only when strictly
    // greater: cells are visited in row-major order, so the smallest index wins ties.
    const int first_col = in.lo * sw - g.pad_left;
    {
      const float* __restrict xr = x + rows.begin * W + first_col;
      const int base = rows.begin * W + first_col;
      for (int q = 0; q < in.hi - in.lo; ++q) {
        yr[in.lo + q] = xr[q * sw];
        ar[in.lo + q] = base + q * sw;
      }
    }
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int j = ih == rows.begin ? 1 : 0; j < g.kernel_width; ++j) {
        const float* __restrict xr = x + ih * W + first_col + j;
        const int base = ih * W + first_col + j;
        for (int q = 0; q < in.hi - in.lo; ++q) {
          const float v = xr[q * sw];
          const bool wins = v > yr[in.lo + q];
          yr[in.lo + q] = wins ? v : yr[in.lo + q];
          ar[in.lo + q] = wins ? base + q * sw : ar[in.lo + q];
        }
      }
    }
  }
}

void avg_element_at(const Pool2dGeometry& g, const float* x, RowSpan rows, int ow, float scale,
                    float* y) {
  const int start = ow * g.stride_width - g.pad_left;
  const int cb = std::max(start, 0), ce = std::min(start + g.kernel_width, g.in_width);
  float sum = 0.0f;
  for (int ih = rows.begin; ih < rows.end; ++ih) {
    for (int iw = cb; iw < ce; ++iw) sum += x[ih * g.in_width + iw];
  }
  *y = sum * scale;
}

void avg_plane(const Pool2dGeometry& g, const Interior& in, float scale, const float* __restrict x,
               float* __restrict y) {
  const int W = g.in_width, OW = g.out_width, sw = g.stride_width;
  for (int oh = 0; oh < g.out_height; ++oh) {
    const RowSpan rows = window_rows(g, oh);
    float* __restrict yr = y + oh * OW;
    for (int ow = 0; ow < in.lo; ++ow) avg_element_at(g, x, rows, ow, scale, yr + ow);
    for (int ow = in.hi; ow < OW; ++ow) avg_element_at(g, x, rows, ow, scale, yr + ow);
    const int first_col = in.lo * sw - g.pad_left;
    for (int ow = in.lo; ow < in.hi; ++ow) yr[ow] = 0.0f;
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      for (int j = 0; j < g.kernel_width; ++j) {
        const float* __restrict xr = x + ih * W + first_col + j;
        for (int q = 0; q < in.hi - in.lo; ++q) yr[in.lo + q] += xr[q * sw];
      }
    }
    for (int ow = in.lo; ow < in.hi; ++ow) yr[ow] *= scale;
  }
}

void avg_backward_plane(const Pool2dGeometry& g, const Interior& in, float scale,
                        const float* __restrict dy, float* __restrict dx) {
  const int W = g.in_width, OW = g.out_width, sw = g.stride_width;
  std::fill(dx, dx + static_cast<std::size_t>(g.in_height) * W, 0.0f);
  for (int oh = 0; oh < g.out_height; ++oh) {
    const RowSpan rows = window_rows(g, oh);
    const float* __restrict dyr = dy + oh * OW;
    for (int ih = rows.begin; ih < rows.end; ++ih) {
      float* __restrict dxr = dx + ih * W;
      // Border columns: clip each window to the input.
      const auto spread_clipped = [&](int ow) {
        const int start = ow * sw - g.pad_left;
        const int cb = std::max(start, 0), ce = std::min(start + g.kernel_width, W);
        for (int iw = cb; iw < ce; ++iw) dxr[iw] += dyr[ow] * scale;
      };
      for (int ow = 0; ow < in.lo; ++ow) spread_clipped(ow);
      for (int ow = in.hi; ow < OW; ++ow) spread_clipped(ow);
      // Interior: for a fixed kernel column the targets ow*sw + j are distinct.
      const int first_col = in.lo * sw - g.pad_left;
      for (int j = 0; j < g.kernel_width; ++j) {
        float* __restrict target = dxr + first_col + j;
        for (int q = 0; q < in.hi - in.lo; ++q) target[q * sw] += dyr[in.lo + q] * scale;
      }
    }
  }
}

void forward_samples(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                     std::int32_t* argmax) {
  const float scale = ops::avg_pool_scale(g);
  if (windows_tile_input(g)) {
    if (type == PoolingType::kMax) {
      max_forward_tiled(g, x, y, argmax);
    } else {
      avg_forward_tiled(g, scale, x, y);
    }
    return;
  }
  const Counts c = counts_of(g);
  const Interior in = interior_columns(g);
  for (std::size_t p = 0; p < c.planes; ++p) {
    if (type == PoolingType::kMax) {
      max_plane(g, in, x + p * c.in_plane, y + p * c.out_plane, argmax + p * c.out_plane);
    } else {
      avg_plane(g, in, scale, x + p * c.in_plane, y + p * c.out_plane);
    }
  }
}

void backward_samples(const Pool2dGeometry& g, PoolingType type, const float* dy, float* dx,
                      const std::int32_t* argmax) {
  const float scale = ops::avg_pool_scale(g);
  if (windows_tile_input(g)) {
    if (type == PoolingType::kMax) {
      max_backward_tiled(g, dy, argmax, dx);
    } else {
      avg_backward_tiled(g, scale, dy, dx);
    }
    return;
  }
  const Counts c = counts_of(g);
  const Interior in = interior_columns(g);
  for (std::size_t p = 0; p < c.planes; ++p) {
    const float* dyp = dy + p * c.out_plane;
    float* dxp = dx + p * c.in_plane;
    if (type == PoolingType::kMax) {
      const std::int32_t* ap = argmax + p * c.out_plane;
      std::fill(dxp, dxp + c.in_plane, 0.0f);
      for (std::size_t o = 0; o < c.out_plane; ++o) {
        if (ap[o] != ops::kNoArgmax) dxp[ap[o]] += dyp[o];
      }
    } else {
      avg_backward_plane(g, in, scale, dyp, dxp);
    }
  }
}

// Input floats per pooling task (256 KiB), in whole planes: LeNet at batch 128 makes 23 tasks of
// 113 planes for the first pooling layer and 7 of 1024 for the second. A quarter of that (92
// tasks) ran both layers 30-35% slower on two threads; pooling is a small part of a step. Where
// the threads are many, tasks get fewer planes (items_per_task), down to kLeastPoolTaskFloats:
// ResNet-20's global pooling made 8 tasks for 64 threads.
constexpr std::size_t kPoolTaskFloats = std::size_t{1} << 16;
constexpr std::size_t kLeastPoolTaskFloats = std::size_t{1} << 14;

// Runs op(sub-geometry, first plane) for each task's run of consecutive (n, c) planes: planes are
// independent, and an argmax indexes inside its own plane, so each task is the same op on a
// geometry of `planes` single-channel samples, and the result does not depend on the thread count.
template <typename Op>
void over_planes(const Pool2dGeometry& g, Op op) {
  const Counts c = counts_of(g);
  const auto planes_of = [&](std::size_t floats) {
    return std::max<std::size_t>(floats / std::max<std::size_t>(c.in_plane, 1), 1);
  };
  parallel_item_ranges(c.planes, planes_of(kPoolTaskFloats), planes_of(kLeastPoolTaskFloats), 1,
                       [&](std::size_t first, std::size_t end) {
                         Pool2dGeometry part = g;
                         part.batch = static_cast<int>(end - first);
                         part.in_channels = part.out_channels = 1;
                         op(part, first);
                       });
}

}  // namespace

void pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                    std::int32_t* argmax) {
  const Counts c = counts_of(g);
  over_planes(g, [&](const Pool2dGeometry& part, std::size_t first) {
    forward_samples(part, type, x + first * c.in_plane, y + first * c.out_plane,
                    argmax + first * c.out_plane);
  });
}

void pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x, const float* y,
                     const float* dy, float* dx, const std::int32_t* argmax) {
  (void)x;  // max pooling reads the winners from argmax; average pooling needs no input
  (void)y;
  const Counts c = counts_of(g);
  over_planes(g, [&](const Pool2dGeometry& part, std::size_t first) {
    backward_samples(part, type, dy + first * c.out_plane, dx + first * c.in_plane,
                     argmax + first * c.out_plane);
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
