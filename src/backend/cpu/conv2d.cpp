#include "backend/cpu/conv2d.hpp"

#include <algorithm>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thread_pool.hpp"

// The minibatch is processed in chunks of samples. For each chunk, im2col writes the columns
// [K x S] (K = in_channels*kh*kw, S = samples*out_h*out_w, columns ordered (n, oh, ow)) and one
// sgemm per pass does the arithmetic:
//   forward   y    = W[Cout x K] * col
//   backward  dW  += dy[Cout x S] * col^T      db += row sums of dy
//             dcol = W^T * dy, folded back into dx by col2im
// Chunks keep the columns in L2 instead of streaming a whole-batch column matrix (tens of MB for
// LeNet's second layer) through memory; backward recomputes them from x, which measured faster
// than keeping them from the forward pass. A one-sample product [Cout x out_h*out_w] is already
// that sample's NCHW output, so GEMMs write y and read dy in place; larger chunks go through a
// [Cout x S] buffer, scattered to (or gathered from) NCHW.
//
// The batch is cut into tasks of kSamplesPerTask consecutive samples, run by parallel_slices, each
// with single-threaded GEMMs: that measured faster than splitting every (small) GEMM across
// threads, and puts im2col and col2im on every core. Each task accumulates its own dW and db; the
// tasks' sums are added in task order afterwards, so the result does not depend on the thread
// count.
//
// Chunk sizes within a slice were chosen by timing LeNet's layers at batch 128 with
// single-threaded BLAS: backward takes one sample at a time; forward takes enough samples for
// kForwardColumns GEMM columns (LeNet conv2: 8 samples, 10% faster than one; conv1: one).
//
// The chunk's columns (reused for dcol in backward) and the [Cout x S] buffer are the running
// thread's scratch (thread_scratch); the workspace holds the partial dW and db of every task but
// the first, which sums straight into dW and db.

namespace dl::cpu {

namespace {

// Every workspace part starts on a 64-byte boundary (16 floats) so SIMD stores never split a line.
constexpr std::size_t kAlignFloats = 16;
// Samples per task: 8 tasks for a batch of 128, enough to keep 8 cores busy, while adding up
// the tasks' partial weight gradients stays small next to the products.
constexpr int kSamplesPerTask = 16;
// Forward GEMM columns per chunk.
constexpr std::size_t kForwardColumns = 512;
// im2col's unit-stride copy moves whole pieces of up to kWidePiece floats (one AVX-512 register)
// and may write up to kCopySlack floats past the last column; rows of up to kNarrowPiece floats
// use pieces of that size (AVX), which then never straddle a cache line.
constexpr int kNarrowPiece = 8;
constexpr int kWidePiece = 16;
constexpr std::size_t kCopySlack = kWidePiece;
// Partial sums kept side by side when reducing a row: one AVX-512 register's worth of lanes.
constexpr int kSumLanes = 16;

std::size_t round_up(std::size_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

struct Sizes {
  std::size_t k = 0;         // rows of col: in_channels * kernel_height * kernel_width
  std::size_t ohw = 0;       // one output plane
  std::size_t x_sample = 0;  // floats of one sample's input
  std::size_t y_sample = 0;  // floats of one sample's output
  std::size_t weights = 0;   // out_channels * k
  int forward_chunk = 1;     // samples per forward GEMM (backward: one)
};

Sizes sizes_of(const Conv2dGeometry& g) {
  Sizes s;
  s.k = static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  s.ohw = static_cast<std::size_t>(g.out_height) * g.out_width;
  s.x_sample = static_cast<std::size_t>(g.in_channels) * g.in_height * g.in_width;
  s.y_sample = static_cast<std::size_t>(g.out_channels) * s.ohw;
  const std::size_t batch = static_cast<std::size_t>(std::max(g.batch, 1));
  const auto samples_for = [&](std::size_t budget, std::size_t per_sample) {
    return static_cast<int>(
        std::clamp<std::size_t>(budget / std::max<std::size_t>(per_sample, 1), 1, batch));
  };
  s.weights = static_cast<std::size_t>(g.out_channels) * s.k;
  s.forward_chunk = samples_for(kForwardColumns, s.ohw);
  return s;
}

std::size_t col_floats(const Sizes& s) {
  return round_up(s.k * s.ohw * s.forward_chunk + kCopySlack);
}
std::size_t out_buffer_floats(const Conv2dGeometry& g, const Sizes& s) {
  return s.forward_chunk > 1
             ? round_up(static_cast<std::size_t>(g.out_channels) * s.ohw * s.forward_chunk)
             : 0;
}
std::size_t scratch_floats(const Conv2dGeometry& g, const Sizes& s) {
  return col_floats(s) + out_buffer_floats(g, s);
}
std::size_t partial_floats(const Conv2dGeometry& g, const Sizes& s) {
  return round_up(s.weights + g.out_channels);
}

int tasks_of(const Conv2dGeometry& g) {
  return task_count(g.batch, kSamplesPerTask);
}
SliceRange task_samples(const Conv2dGeometry& g, int task) {
  return {task * kSamplesPerTask, std::min(g.batch, (task + 1) * kSamplesPerTask)};
}

// The output columns [lo, hi) whose input column ow*stride + offset lies inside [0, width).
// Outside that range the input is padding.
struct ValidRange {
  int lo = 0, hi = 0;
};
ValidRange valid_outputs(int offset, int stride, int width, int out_size) {
  // Smallest ow with ow*stride + offset >= 0, largest with ow*stride + offset <= width - 1.
  int lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int hi = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
  lo = std::min(lo, out_size);
  hi = std::clamp(hi, lo, out_size);
  return {lo, hi};
}

// One output row of an im2col row: zeros where the window column is padding, else the input
// taken every `stride` columns; kStride > 0 fixes the stride at compile time (1: a plain copy).
// Adding 0.0f stops GCC from turning the unit-stride copy into a memcpy call, which costs more
// than the copy itself for rows this short (LeNet: 24 and 8 floats); it changes nothing but the
// sign of a zero.
template <int kStride>
inline void gather_row(const float* __restrict src, int stride, ValidRange cols, int width,
                       float* __restrict dst) {
  const int s = kStride > 0 ? kStride : stride;
  for (int q = 0; q < cols.lo; ++q) dst[q] = 0.0f;
  for (int q = 0; q < cols.hi - cols.lo; ++q) dst[cols.lo + q] = src[q * s] + 0.0f;
  for (int q = cols.hi; q < width; ++q) dst[q] = 0.0f;
}

// col[(c, i, j)][(n, oh, ow)] = x[n][c][oh*sh + i - pad_top][ow*sw + j - pad_left], zero outside,
// for `samples` samples starting at x; each row of col holds row_stride floats.
template <int kStride>
void im2col(const Conv2dGeometry& g, const float* __restrict x, int samples, float* __restrict col,
            std::size_t row_stride) {
  const int H = g.in_height, W = g.in_width, OH = g.out_height, OW = g.out_width;
  const std::size_t in_plane = static_cast<std::size_t>(H) * W;
  const std::size_t out_plane = static_cast<std::size_t>(OH) * OW;
  const std::size_t src_step = static_cast<std::size_t>(g.stride_height) * W;
  float* __restrict row = col;
  for (int c = 0; c < g.in_channels; ++c) {
    for (int i = 0; i < g.kernel_height; ++i) {
      const ValidRange rows = valid_outputs(i - g.pad_top, g.stride_height, H, OH);
      const int first_ih = rows.lo * g.stride_height + i - g.pad_top;
      for (int j = 0; j < g.kernel_width; ++j, row += row_stride) {
        const ValidRange cols = valid_outputs(j - g.pad_left, g.stride_width, W, OW);
        const int first_iw = cols.lo * g.stride_width + j - g.pad_left;
        for (int n = 0; n < samples; ++n) {
          float* __restrict out = row + n * out_plane;
          std::fill(out, out + static_cast<std::size_t>(rows.lo) * OW, 0.0f);
          const float* __restrict src =
              x + (static_cast<std::size_t>(n) * g.in_channels + c) * in_plane +
              static_cast<std::size_t>(first_ih) * W + first_iw;
          float* __restrict dst = out + static_cast<std::size_t>(rows.lo) * OW;
          for (int oh = rows.lo; oh < rows.hi; ++oh, src += src_step, dst += OW) {
            gather_row<kStride>(src, g.stride_width, cols, OW, dst);
          }
          std::fill(out + static_cast<std::size_t>(rows.hi) * OW, out + out_plane, 0.0f);
        }
      }
    }
  }
}

// im2col for stride 1 without padding (LeNet's layers): every window lies inside the input, so
// each output row is one short copy. Rows are copied in whole pieces of kPiece floats (one SIMD
// register: 8 for rows up to 8, else 16), the last of which may run past the row's end: the
// excess lands where the next rows of col go, which are written afterwards, or in the kCopySlack
// floats the workspace reserves after the columns. Reading a whole piece needs the floats up to
// the piece's end to lie inside x, checked against x_end; the last rows of x are copied exactly.
template <int kPiece>
void im2col_unit_stride_unpadded(const Conv2dGeometry& g, const float* __restrict x,
                                 const float* x_end, int samples, float* __restrict col,
                                 std::size_t row_stride) {
  const int W = g.in_width, OH = g.out_height, OW = g.out_width;
  const std::size_t in_plane = static_cast<std::size_t>(g.in_height) * W;
  const std::size_t out_plane = static_cast<std::size_t>(OH) * OW;
  const int pieces_span = (OW + kPiece - 1) / kPiece * kPiece;
  float* __restrict row = col;
  for (int c = 0; c < g.in_channels; ++c) {
    for (int i = 0; i < g.kernel_height; ++i) {
      for (int j = 0; j < g.kernel_width; ++j, row += row_stride) {
        for (int n = 0; n < samples; ++n) {
          const float* __restrict src =
              x + (static_cast<std::size_t>(n) * g.in_channels + c) * in_plane + i * W + j;
          float* __restrict dst = row + n * out_plane;
          // Rows whose last piece still reads inside x: all but near the end of x.
          int whole = OH;
          if (x_end - src < static_cast<std::ptrdiff_t>(OH - 1) * W + pieces_span) {
            const std::ptrdiff_t room = x_end - src - pieces_span;
            whole = room < 0 ? 0 : static_cast<int>(room / W) + 1;
          }
          for (int oh = 0; oh < whole; ++oh) {
            for (int q = 0; q < OW; q += kPiece) {
              for (int l = 0; l < kPiece; ++l) dst[oh * OW + q + l] = src[oh * W + q + l];
            }
          }
          for (int oh = whole; oh < OH; ++oh) {
            for (int ow = 0; ow < OW; ++ow) dst[oh * OW + ow] = src[oh * W + ow] + 0.0f;
          }
        }
      }
    }
  }
}

template <int kStride>
inline void add_strided(const float* __restrict src, int stride, int count, float* __restrict dst) {
  const int s = kStride > 0 ? kStride : stride;
  for (int i = 0; i < count; ++i) dst[i * s] += src[i];
}

// dx[n][c] = sum over (i, j, oh, ow) of dcol[(c, i, j)][(n, oh, ow)] placed where im2col read it.
// Visits dcol in storage order; the chunk's dx (LeNet: one sample, 11 KiB) stays in cache.
template <int kStride>
void col2im(const Conv2dGeometry& g, const float* __restrict dcol, int samples,
            std::size_t row_stride, float* __restrict dx) {
  const int H = g.in_height, W = g.in_width, OH = g.out_height, OW = g.out_width;
  const std::size_t in_plane = static_cast<std::size_t>(H) * W;
  const std::size_t out_plane = static_cast<std::size_t>(OH) * OW;
  const std::size_t dst_step = static_cast<std::size_t>(g.stride_height) * W;
  std::fill(dx, dx + samples * g.in_channels * in_plane, 0.0f);
  const float* __restrict row = dcol;
  for (int c = 0; c < g.in_channels; ++c) {
    for (int i = 0; i < g.kernel_height; ++i) {
      const ValidRange rows = valid_outputs(i - g.pad_top, g.stride_height, H, OH);
      const int first_ih = rows.lo * g.stride_height + i - g.pad_top;
      for (int j = 0; j < g.kernel_width; ++j, row += row_stride) {
        const ValidRange cols = valid_outputs(j - g.pad_left, g.stride_width, W, OW);
        const int first_iw = cols.lo * g.stride_width + j - g.pad_left;
        for (int n = 0; n < samples; ++n) {
          const float* __restrict src =
              row + n * out_plane + static_cast<std::size_t>(rows.lo) * OW + cols.lo;
          float* __restrict dst = dx +
                                  (static_cast<std::size_t>(n) * g.in_channels + c) * in_plane +
                                  static_cast<std::size_t>(first_ih) * W + first_iw;
          for (int oh = rows.lo; oh < rows.hi; ++oh, src += OW, dst += dst_step) {
            add_strided<kStride>(src, g.stride_width, cols.hi - cols.lo, dst);
          }
        }
      }
    }
  }
}

// col2im for stride 1 without padding, the counterpart of im2col_unit_stride_unpadded. The kernel
// column j is the outer loop: inputs added for the same j sit at the same offsets, so an add that
// reads what a recent add wrote overlaps it exactly, which store forwarding serves, instead of by
// one float, which would stall until the store retires. kPiece > 0 promises rows of whole pieces
// of that many floats, which compile to plain vector adds without a remainder loop.
template <int kPiece>
void col2im_unit_stride_unpadded(const Conv2dGeometry& g, const float* __restrict dcol, int samples,
                                 std::size_t row_stride, float* __restrict dx) {
  const int W = g.in_width, OH = g.out_height, OW = g.out_width;
  const int kh = g.kernel_height, kw = g.kernel_width;
  const std::size_t in_plane = static_cast<std::size_t>(g.in_height) * W;
  const std::size_t out_plane = static_cast<std::size_t>(OH) * OW;
  std::fill(dx, dx + samples * g.in_channels * in_plane, 0.0f);
  for (int c = 0; c < g.in_channels; ++c) {
    for (int j = 0; j < kw; ++j) {
      for (int n = 0; n < samples; ++n) {
        float* __restrict plane = dx + (static_cast<std::size_t>(n) * g.in_channels + c) * in_plane;
        for (int i = 0; i < kh; ++i) {
          const float* __restrict src =
              dcol + (static_cast<std::size_t>(c * kh + i) * kw + j) * row_stride + n * out_plane;
          float* __restrict dst = plane + i * W + j;
          for (int oh = 0; oh < OH; ++oh) {
            if (kPiece > 0) {
              for (int q = 0; q < OW; q += kPiece) {
                for (int l = 0; l < kPiece; ++l) dst[oh * W + q + l] += src[oh * OW + q + l];
              }
            } else {
              for (int ow = 0; ow < OW; ++ow) dst[oh * W + ow] += src[oh * OW + ow];
            }
          }
        }
      }
    }
  }
}

// Stride 1 and every window inside the input (LeNet's layers): loops free of padding bookkeeping.
bool unit_stride_unpadded(const Conv2dGeometry& g) {
  return g.stride_width == 1 && g.stride_height == 1 && g.pad_top == 0 && g.pad_left == 0 &&
         g.out_height + g.kernel_height - 1 <= g.in_height &&
         g.out_width + g.kernel_width - 1 <= g.in_width;
}

// x_end: the end of the whole minibatch's input, which bounds how far a copy may read.
void im2col_any(const Conv2dGeometry& g, const float* x, const float* x_end, int samples,
                float* col, std::size_t row_stride) {
  if (unit_stride_unpadded(g) && g.out_width <= kNarrowPiece) {
    im2col_unit_stride_unpadded<kNarrowPiece>(g, x, x_end, samples, col, row_stride);
  } else if (unit_stride_unpadded(g)) {
    im2col_unit_stride_unpadded<kWidePiece>(g, x, x_end, samples, col, row_stride);
  } else if (g.stride_width == 1) {
    im2col<1>(g, x, samples, col, row_stride);
  } else {
    im2col<0>(g, x, samples, col, row_stride);
  }
}

void col2im_any(const Conv2dGeometry& g, const float* dcol, int samples, std::size_t row_stride,
                float* dx) {
  if (unit_stride_unpadded(g) && g.out_width % kNarrowPiece == 0) {
    col2im_unit_stride_unpadded<kNarrowPiece>(g, dcol, samples, row_stride, dx);
  } else if (unit_stride_unpadded(g)) {
    col2im_unit_stride_unpadded<0>(g, dcol, samples, row_stride, dx);
  } else if (g.stride_width == 1) {
    col2im<1>(g, dcol, samples, row_stride, dx);
  } else {
    col2im<0>(g, dcol, samples, row_stride, dx);
  }
}

// Sum of `count` floats, with kSumLanes independent partial sums so the loop vectorizes without
// reassociating floating point behind the compiler's back.
float row_sum(const float* __restrict v, std::size_t count) {
  float lanes[kSumLanes] = {};
  std::size_t i = 0;
  for (; i + kSumLanes <= count; i += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) lanes[l] += v[i + l];
  }
  float total = 0.0f;
  for (; i < count; ++i) total += v[i];
  for (int l = 0; l < kSumLanes; ++l) total += lanes[l];
  return total;
}

void add_bias(const float* __restrict src, float bias, std::size_t count, float* __restrict dst) {
  for (std::size_t s = 0; s < count; ++s) dst[s] = src[s] + bias;
}

void add_bias_in_place(float bias, std::size_t count, float* __restrict v) {
  for (std::size_t s = 0; s < count; ++s) v[s] += bias;
}

// Forward over samples [r.begin, r.end) with the running thread's scratch.
void forward_samples(const Conv2dGeometry& g, const Sizes& s, SliceRange r, const float* x,
                     const float* w, const float* b, float* y, float* workspace) {
  const int chunk = s.forward_chunk;
  const int cout = g.out_channels, k = static_cast<int>(s.k);
  float* col = workspace;
  float* out = workspace + col_floats(s);
  const float* x_end = x + g.batch * s.x_sample;
  for (int n0 = r.begin; n0 < r.end; n0 += chunk) {
    const int samples = std::min(chunk, r.end - n0);
    const std::size_t cols = s.ohw * samples;
    im2col_any(g, x + n0 * s.x_sample, x_end, samples, col, cols);
    float* y0 = y + n0 * s.y_sample;
    float* product = samples == 1 ? y0 : out;  // one sample's product is already NCHW
    sgemm(false, false, cout, static_cast<int>(cols), k, 1.0f, w, k, col, static_cast<int>(cols),
          0.0f, product, static_cast<int>(cols));
    if (samples == 1) {
      for (int c = 0; c < cout; ++c) add_bias_in_place(b[c], s.ohw, y0 + c * s.ohw);
      continue;
    }
    // [Cout][n][ohw] -> [n][Cout][ohw] plus bias.
    for (int n = 0; n < samples; ++n) {
      for (int c = 0; c < cout; ++c) {
        add_bias(product + c * cols + n * s.ohw, b[c], s.ohw, y0 + n * s.y_sample + c * s.ohw);
      }
    }
  }
}

// Backward over samples [r.begin, r.end), one at a time: dx for those samples, and their sums of
// dW and db into dw and db (zero for an empty range).
void backward_samples(const Conv2dGeometry& g, const Sizes& s, SliceRange r, const float* x,
                      const float* w, const float* dy, float* dx, float* dw, float* db,
                      float* workspace) {
  const int cout = g.out_channels, k = static_cast<int>(s.k);
  const int ld = static_cast<int>(s.ohw);
  float* col = workspace;
  const float* x_end = x + g.batch * s.x_sample;
  std::fill(db, db + cout, 0.0f);
  if (r.begin == r.end) std::fill(dw, dw + s.weights, 0.0f);
  for (int n = r.begin; n < r.end; ++n) {
    const float* dyn = dy + n * s.y_sample;  // one sample's dy is already [Cout x ohw]
    for (int c = 0; c < cout; ++c) db[c] += row_sum(dyn + c * s.ohw, s.ohw);
    im2col_any(g, x + n * s.x_sample, x_end, 1, col, s.ohw);
    const float beta = n == r.begin ? 0.0f : 1.0f;  // dW accumulates over samples
    sgemm(false, true, cout, k, ld, 1.0f, dyn, ld, col, ld, beta, dw, k);
    if (dx == nullptr) continue;
    // The columns are spent: dcol takes their place.
    sgemm(true, false, k, ld, cout, 1.0f, w, k, dyn, ld, 0.0f, col, ld);
    col2im_any(g, col, 1, s.ohw, dx + n * s.x_sample);
  }
}

}  // namespace

std::size_t conv2d_workspace_floats(const Conv2dGeometry& g) {
  const Sizes s = sizes_of(g);
  return partial_floats(g, s) * (tasks_of(g) - 1);
}

void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                    float* y, float* /*workspace*/) {
  const Sizes s = sizes_of(g);
  parallel_slices(tasks_of(g), [&](int i) {
    forward_samples(g, s, task_samples(g, i), x, w, b, y, thread_scratch(scratch_floats(g, s)));
  });
}

void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db, float* workspace) {
  const Sizes s = sizes_of(g);
  const int tasks = tasks_of(g);
  // Task 0 sums straight into dw and db, the others into their part of the workspace.
  const auto partial_dw = [&](int i) {
    return i == 0 ? dw : workspace + (i - 1) * partial_floats(g, s);
  };
  const auto partial_db = [&](int i) { return i == 0 ? db : partial_dw(i) + s.weights; };
  parallel_slices(tasks, [&](int i) {
    backward_samples(g, s, task_samples(g, i), x, w, dy, dx, partial_dw(i), partial_db(i),
                     thread_scratch(scratch_floats(g, s)));
  });
  for (int i = 1; i < tasks; ++i) {
    const float* __restrict pw = partial_dw(i);
    const float* __restrict pb = partial_db(i);
    for (std::size_t e = 0; e < s.weights; ++e) dw[e] += pw[e];
    for (int c = 0; c < g.out_channels; ++c) db[c] += pb[c];
  }
}

}  // namespace dl::cpu
