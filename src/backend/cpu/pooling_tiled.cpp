// The tiled path of CPU pooling; pooling.cpp says when it applies and how it works.
#include "backend/cpu/pooling_tiled.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

#include "backend/cpu/lane_vectors.hpp"
#include "backend/ops/pooling.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace pooling_detail {

namespace {

// Floats (and as many int32) of the tiled path's stack buffers: 2 x 8 KiB, well inside L1.
constexpr int kBlockFloats = 2048;

// A tile row's loops run over chunks of V floats (16: a cache line, one AVX-512 register; 8, one
// AVX2 register, in builds without AVX-512 and for shorter rows), the last chunk moved back to
// end at the row's end: overlapping chunks compute the same values again, and no remainder loop
// runs, which for rows this short (LeNet: 24 and 8 floats) cost as much as the chunks. The
// vectors are lane_vectors.hpp's, never wider than the build's registers (kRegisterLanes).

// call(V) with V an integral constant for the widest chunk a row of `span` floats holds; false
// (no call) for rows of fewer than 8, which keep their plain loops.
template <typename Call>
bool by_chunk_width(int span, const Call& call) {
  if constexpr (kRegisterLanes >= 16) {
    if (span >= 16) {
      call(std::integral_constant<int, 16>{});
      return true;
    }
  }
  if (span < 8) return false;
  call(std::integral_constant<int, 8>{});
  return true;
}

// body(k) for the chunks [k, k + V) that cover [0, span), span >= V.
template <int V, typename Body>
inline void over_chunks(int span, const Body& body) {
  for (int k0 = 0;; k0 += V) {
    body(std::min(k0, span - V));
    if (k0 + V >= span) return;
  }
}

// Down a two-row window: b[k] = the larger of top[k] and top[W + k] (the top one where equal or
// unordered), at[k] its plane index.
template <int V>
void max_down_two_rows(const float* __restrict top, int W, int base, int span, float* __restrict b,
                       std::int32_t* __restrict at) {
  constexpr LaneIndex<V> kLanes = lane_numbers<V>(std::make_index_sequence<V>{});
  over_chunks<V>(span, [&](int k) {
    const Lanes<V> up = load_lanes<V>(top + k);
    const Lanes<V> down = load_lanes<V>(top + W + k);
    const LaneIndex<V> low = down > up;
    store_lanes<V>(b + k, low ? down : up);
    store_vector(at + k, (base + k) + kLanes + (low & W));
  });
}

// out[k] = gr[k] where the window's winner at[k] is plane index row_base + k, else 0.
template <int V>
void spread_winners(const float* __restrict gr, const std::int32_t* __restrict at, int row_base,
                    int span, float* __restrict out) {
  constexpr LaneIndex<V> kLanes = lane_numbers<V>(std::make_index_sequence<V>{});
  over_chunks<V>(span, [&](int k) {
    const Lanes<V> grad = load_lanes<V>(gr + k);
    const LaneIndex<V> wins = load_vector<LaneIndex<V>>(at + k) == (row_base + k) + kLanes;
    store_lanes<V>(out + k, wins ? grad : Lanes<V>{});
  });
}

}  // namespace

Counts counts_of(const Pool2dGeometry& g) {
  return {static_cast<std::size_t>(g.batch) * g.in_channels,
          static_cast<std::size_t>(g.in_height) * g.in_width,
          static_cast<std::size_t>(g.out_height) * g.out_width};
}

bool windows_tile_input(const Pool2dGeometry& g) {
  return g.stride_height == g.kernel_height && g.stride_width == g.kernel_width && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_height * g.kernel_height <= g.in_height &&
         g.out_width * g.kernel_width <= g.in_width && g.out_width * g.kernel_width <= kBlockFloats;
}

namespace {

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

}  // namespace

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
      if (g.kernel_height == 2 && by_chunk_width(span, [&](auto v) {
            max_down_two_rows<decltype(v)::value>(top, W, base, span, b, at);
          })) {
        continue;
      }
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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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
        const bool chunked = by_chunk_width(
            span, [&](auto v) { spread_winners<decltype(v)::value>(gr, at, row_base, span, out); });
        if (!chunked) {
          for (int k = 0; k < span; ++k) out[k] = at[k] == row_base + k ? gr[k] : 0.0f;
        }
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

}  // namespace pooling_detail
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
