#include "backend/cpu/pooling.hpp"

#include <algorithm>
#include <limits>

#include "backend/cpu/thread_pool.hpp"

// argmax convention: for each output element, the index of the winning input inside its own
// (n, c) input plane, ih * in_width + iw. Among equal maxima the smallest index (the first in
// row-major order) wins. A window that lies entirely in the padding has no winner: its output is
// 0 and its argmax is kNoWinner, which backward skips.
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

namespace {

constexpr std::int32_t kNoWinner = -1;
// Floats (and as many int32) of the tiled path's stack buffers: 2 x 8 KiB, well inside L1.
constexpr int kBlockFloats = 2048;

struct Counts {
  std::size_t planes = 0, in_plane = 0, out_plane = 0;
};
Counts counts_of(const Pool2dGeometry& g) {
  return {static_cast<std::size_t>(g.batch) * g.in_channels,
          static_cast<std::size_t>(g.in_height) * g.in_width,
          static_cast<std::size_t>(g.out_height) * g.out_width};
}

// ---- tiled path -------------------------------------------------------------------------------

bool windows_tile_input(const Pool2dGeometry& g) {
  return g.stride_height == g.kernel_height && g.stride_width == g.kernel_width && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_height * g.kernel_height <= g.in_height &&
         g.out_width * g.kernel_width <= g.in_width && g.out_width * g.kernel_width <= kBlockFloats;
}

// Walks the window rows ("tile rows": the kernel_height input rows feeding one output row) of all
// planes in order, in blocks whose covered inputs fit the stack buffers.
class TileRows {
 public:
  struct Row {
    std::size_t input_offset;  // of the tile row's first input row, from the start of x
    int plane_offset;          // of the same row inside its plane
  };

  explicit TileRows(const Pool2dGeometry& g)
      : g_(g),
        in_plane_(counts_of(g).in_plane),
        span_(g.out_width * g.kernel_width),
        rows_per_block_(std::max(kBlockFloats / std::max(span_, 1), 1)),
        total_(counts_of(g).planes * g.out_height) {}

  // Inputs of one tile row that some window covers.
  int span() const { return span_; }
  bool done() const { return block_end_ >= total_; }
  // Starts the next block and returns its number of tile rows; its outputs start at
  // y + first_row() * out_width.
  int begin_block() {
    first_ = block_end_;
    block_end_ += std::min<std::size_t>(rows_per_block_, total_ - block_end_);
    return static_cast<int>(block_end_ - first_);
  }
  std::size_t first_row() const { return first_; }
  // The next tile row, in order (no division per row).
  Row next() {
    const Row r{plane_ * in_plane_ + static_cast<std::size_t>(oh_) * row_stride(),
                oh_ * row_stride()};
    if (++oh_ == g_.out_height) {
      oh_ = 0;
      ++plane_;
    }
    return r;
  }

 private:
  int row_stride() const { return g_.kernel_height * g_.in_width; }

  const Pool2dGeometry& g_;
  std::size_t in_plane_;
  int span_;
  int rows_per_block_;
  std::size_t total_;
  std::size_t first_ = 0, block_end_ = 0;
  std::size_t plane_ = 0;
  int oh_ = 0;
};

// Across the kernel columns: kernel_width consecutive entries of (best, where) form one window.
// kKw > 0 fixes the width at compile time (the common 2), so the strided loads vectorize.
template <int kKw>
void max_across(int kw_runtime, const float* __restrict best, const std::int32_t* __restrict where,
                int outputs, float* __restrict y, std::int32_t* __restrict argmax) {
  const int kw = kKw > 0 ? kKw : kw_runtime;
  for (int q = 0; q < outputs; ++q) {
    float b = best[q * kw];
    std::int32_t at = where[q * kw];
    for (int j = 1; j < kw; ++j) {
      const float v = best[q * kw + j];
      const std::int32_t i = where[q * kw + j];
      const bool wins = v > b || (v == b && i < at);
      b = wins ? v : b;
      at = wins ? i : at;
    }
    y[q] = b;
    argmax[q] = at;
  }
}

void max_forward_tiled(const Pool2dGeometry& g, const float* x, float* y, std::int32_t* argmax) {
  const int W = g.in_width, OW = g.out_width;
  TileRows tiles(g);
  const int span = tiles.span();
  float best[kBlockFloats];
  std::int32_t where[kBlockFloats];
  while (!tiles.done()) {
    const int rows = tiles.begin_block();
    for (int r = 0; r < rows; ++r) {
      const TileRows::Row row = tiles.next();
      const float* __restrict top = x + row.input_offset;
      const int base = row.plane_offset;
      float* __restrict b = best + r * span;
      std::int32_t* __restrict at = where + r * span;
      // Down the kernel rows; strictly greater, so the top-most of equal values stays. Two rows
      // (the common case) in one pass of plain selects: the compiler turns the running update
      // below into masked stores, which cost more.
      if (g.kernel_height == 2) {
        const float* __restrict bottom = top + W;
        for (int k = 0; k < span; ++k) {
          const bool low = bottom[k] > top[k];
          b[k] = low ? bottom[k] : top[k];
          at[k] = base + k + (low ? W : 0);
        }
        continue;
      }
      for (int k = 0; k < span; ++k) {
        b[k] = top[k];
        at[k] = base + k;
      }
      for (int i = 1; i < g.kernel_height; ++i) {
        const float* __restrict in = top + i * W;
        const int row_base = base + i * W;
        for (int k = 0; k < span; ++k) {
          const bool wins = in[k] > b[k];
          b[k] = wins ? in[k] : b[k];
          at[k] = wins ? row_base + k : at[k];
        }
      }
    }
    float* yb = y + tiles.first_row() * OW;
    std::int32_t* ab = argmax + tiles.first_row() * OW;
    if (g.kernel_width == 2) {
      max_across<2>(2, best, where, rows * OW, yb, ab);
    } else {
      max_across<0>(g.kernel_width, best, where, rows * OW, yb, ab);
    }
  }
}

template <int kKw>
void sum_across(int kw_runtime, const float* __restrict sums, int outputs, float scale,
                float* __restrict y) {
  const int kw = kKw > 0 ? kKw : kw_runtime;
  for (int q = 0; q < outputs; ++q) {
    float s = sums[q * kw];
    for (int j = 1; j < kw; ++j) s += sums[q * kw + j];
    y[q] = s * scale;
  }
}

void avg_forward_tiled(const Pool2dGeometry& g, float scale, const float* x, float* y) {
  const int W = g.in_width, OW = g.out_width;
  TileRows tiles(g);
  const int span = tiles.span();
  float sums[kBlockFloats];
  while (!tiles.done()) {
    const int rows = tiles.begin_block();
    for (int r = 0; r < rows; ++r) {
      const float* __restrict top = x + tiles.next().input_offset;
      float* __restrict s = sums + r * span;
      int i = 1;
      if (g.kernel_height >= 2) {  // the first two rows in one pass
        for (int k = 0; k < span; ++k) s[k] = top[k] + top[W + k];
        i = 2;
      } else {
        for (int k = 0; k < span; ++k) s[k] = top[k];
      }
      for (; i < g.kernel_height; ++i) {
        const float* __restrict in = top + i * W;
        for (int k = 0; k < span; ++k) s[k] += in[k];
      }
    }
    float* yb = y + tiles.first_row() * OW;
    if (g.kernel_width == 2) {
      sum_across<2>(2, sums, rows * OW, scale, yb);
    } else {
      sum_across<0>(g.kernel_width, sums, rows * OW, scale, yb);
    }
  }
}

// Repeats each of `outputs` values kernel_width times: the reverse of the pass across columns.
template <int kKw, typename T>
void spread_across(int kw_runtime, const T* __restrict v, int outputs, T* __restrict out) {
  const int kw = kKw > 0 ? kKw : kw_runtime;
  for (int q = 0; q < outputs; ++q) {
    for (int j = 0; j < kw; ++j) out[q * kw + j] = v[q];
  }
}

template <typename T>
void spread_any(int kw, const T* v, int outputs, T* out) {
  if (kw == 2) {
    spread_across<2>(2, v, outputs, out);
  } else {
    spread_across<0>(kw, v, outputs, out);
  }
}

// Zeroes the inputs no window covers: columns right of the tiles, rows below them.
void clear_untiled(const Pool2dGeometry& g, float* dx) {
  const int W = g.in_width, H = g.in_height;
  const int tiled_w = g.out_width * g.kernel_width, tiled_h = g.out_height * g.kernel_height;
  if (tiled_w == W && tiled_h == H) return;
  const Counts c = counts_of(g);
  for (std::size_t p = 0; p < c.planes; ++p) {
    float* plane = dx + p * c.in_plane;
    for (int ih = 0; ih < tiled_h; ++ih)
      std::fill(plane + ih * W + tiled_w, plane + ih * W + W, 0.0f);
    std::fill(plane + tiled_h * W, plane + H * W, 0.0f);
  }
}

void max_backward_tiled(const Pool2dGeometry& g, const float* dy, const std::int32_t* argmax,
                        float* dx) {
  const int W = g.in_width, OW = g.out_width;
  TileRows tiles(g);
  const int span = tiles.span();
  float grad[kBlockFloats];
  std::int32_t where[kBlockFloats];
  while (!tiles.done()) {
    const int rows = tiles.begin_block();
    spread_any(g.kernel_width, dy + tiles.first_row() * OW, rows * OW, grad);
    spread_any(g.kernel_width, argmax + tiles.first_row() * OW, rows * OW, where);
    for (int r = 0; r < rows; ++r) {
      const TileRows::Row row = tiles.next();
      float* __restrict top = dx + row.input_offset;
      const int base = row.plane_offset;
      const float* __restrict gr = grad + r * span;
      const std::int32_t* __restrict at = where + r * span;
      for (int i = 0; i < g.kernel_height; ++i) {
        float* __restrict out = top + i * W;
        const int row_base = base + i * W;
        for (int k = 0; k < span; ++k) out[k] = at[k] == row_base + k ? gr[k] : 0.0f;
      }
    }
  }
  clear_untiled(g, dx);
}

void avg_backward_tiled(const Pool2dGeometry& g, float scale, const float* dy, float* dx) {
  const int W = g.in_width, OW = g.out_width;
  TileRows tiles(g);
  const int span = tiles.span();
  float grad[kBlockFloats];
  while (!tiles.done()) {
    const int rows = tiles.begin_block();
    spread_any(g.kernel_width, dy + tiles.first_row() * OW, rows * OW, grad);
    for (int r = 0; r < rows; ++r) {
      float* __restrict top = dx + tiles.next().input_offset;
      const float* __restrict gr = grad + r * span;
      for (int i = 0; i < g.kernel_height; ++i) {
        float* __restrict out = top + i * W;
        for (int k = 0; k < span; ++k) out[k] = gr[k] * scale;
      }
    }
  }
  clear_untiled(g, dx);
}

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
  std::int32_t where = kNoWinner;
  for (int ih = rows.begin; ih < rows.end; ++ih) {
    for (int iw = cb; iw < ce; ++iw) {
      const float v = x[ih * g.in_width + iw];
      if (where == kNoWinner || v > best) {
        best = v;
        where = ih * g.in_width + iw;
      }
    }
  }
  *y = where == kNoWinner ? 0.0f : best;
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
        ar[ow] = kNoWinner;
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
  const float scale = 1.0f / static_cast<float>(g.kernel_height * g.kernel_width);
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
  const float scale = 1.0f / static_cast<float>(g.kernel_height * g.kernel_width);
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
        if (ap[o] != kNoWinner) dxp[ap[o]] += dyp[o];
      }
    } else {
      avg_backward_plane(g, in, scale, dyp, dxp);
    }
  }
}

// Samples per pooling task (8 tasks for a batch of 128).
constexpr int kPoolSamplesPerTask = 16;

// Runs op(sub-geometry, first sample) for each task of kPoolSamplesPerTask samples: planes are
// independent, so each task is the same op on its samples and the result does not depend on the
// thread count.
template <typename Op>
void over_slices(const Pool2dGeometry& g, Op op) {
  parallel_slices(task_count(g.batch, kPoolSamplesPerTask), [&](int i) {
    const SliceRange samples = {i * kPoolSamplesPerTask,
                                std::min(g.batch, (i + 1) * kPoolSamplesPerTask)};
    if (samples.size() == 0) return;
    Pool2dGeometry part = g;
    part.batch = samples.size();
    op(part, static_cast<std::size_t>(samples.begin));
  });
}

}  // namespace

void pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                    std::int32_t* argmax) {
  const Counts c = counts_of(g);
  over_slices(g, [&](const Pool2dGeometry& part, std::size_t first) {
    const std::size_t planes = first * g.in_channels;
    forward_samples(part, type, x + planes * c.in_plane, y + planes * c.out_plane,
                    argmax + planes * c.out_plane);
  });
}

void pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x, const float* y,
                     const float* dy, float* dx, const std::int32_t* argmax) {
  (void)x;  // max pooling reads the winners from argmax; average pooling needs no input
  (void)y;
  const Counts c = counts_of(g);
  over_slices(g, [&](const Pool2dGeometry& part, std::size_t first) {
    const std::size_t planes = first * g.in_channels;
    backward_samples(part, type, dy + planes * c.out_plane, dx + planes * c.in_plane,
                     argmax + planes * c.out_plane);
  });
}

}  // namespace dl::cpu
