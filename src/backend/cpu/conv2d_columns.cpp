// im2col and col2im (conv2d_columns.hpp): the general strided, padded loops and the unpadded
// stride-1 ones LeNet's layers take.
#include "backend/cpu/conv2d_columns.hpp"

#include <algorithm>

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace conv_detail {

namespace {

// im2col's unit-stride copy moves whole pieces of up to kWidePiece floats (one AVX-512 register)
// and may write up to kCopySlack floats past the last column; rows of up to kNarrowPiece floats
// use pieces of that size (AVX), which then never straddle a cache line.
constexpr int kNarrowPiece = 8;
constexpr int kWidePiece = 16;
static_assert(kCopySlack >= kWidePiece, "a wide piece may run kWidePiece floats past the end");

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
[[gnu::always_inline]] inline void im2col(const Conv2dGeometry& g, const float* __restrict x,
                                          int samples, float* __restrict col,
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
[[gnu::always_inline]] inline void im2col_unit_stride_unpadded(const Conv2dGeometry& g,
                                                               const float* __restrict x,
                                                               const float* x_end, int samples,
                                                               float* __restrict col,
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
[[gnu::always_inline]] inline void col2im(const Conv2dGeometry& g, const float* __restrict dcol,
                                          int samples, std::size_t row_stride,
                                          float* __restrict dx) {
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
[[gnu::always_inline]] inline void col2im_unit_stride_unpadded(const Conv2dGeometry& g,
                                                               const float* __restrict dcol,
                                                               int samples, std::size_t row_stride,
                                                               float* __restrict dx) {
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

// im2row for stride 1 without padding and kernel rows of at most kNarrowPiece floats: each
// (c, i) part of a row of col_t is kernel_width inputs from one input row, copied as one piece of
// kNarrowPiece floats whose excess lands where the next parts go (written afterwards) or in the
// kCopySlack floats after the last row; near the end of x, where a whole piece would read past
// it, the part is copied exactly.
void im2row_unit_stride_unpadded(const Conv2dGeometry& g, const float* __restrict x,
                                 const float* x_end, float* __restrict col_t) {
  const int W = g.in_width, kh = g.kernel_height, kw = g.kernel_width;
  const std::size_t in_plane = static_cast<std::size_t>(g.in_height) * W;
  for (int oh = 0; oh < g.out_height; ++oh) {
    for (int ow = 0; ow < g.out_width; ++ow) {
      const float* plane = x + oh * W + ow;
      for (int c = 0; c < g.in_channels; ++c, plane += in_plane) {
        for (int i = 0; i < kh; ++i, col_t += kw) {
          const float* __restrict src = plane + i * W;
          if (x_end - src >= kNarrowPiece) {
            for (int l = 0; l < kNarrowPiece; ++l) col_t[l] = src[l];
          } else {
            for (int j = 0; j < kw; ++j) col_t[j] = src[j];
          }
        }
      }
    }
  }
}

// The transpose of one sample's im2col columns (k rows of ohw) into col_t, k floats per row.
void transpose_columns(const float* __restrict col, std::size_t k, std::size_t ohw,
                       float* __restrict col_t) {
  for (std::size_t p = 0; p < ohw; ++p) {
    for (std::size_t r = 0; r < k; ++r) col_t[p * k + r] = col[r * ohw + p];
  }
}

// The layouts' loops, inlined into im2col_any and col2im_any twice: for one sample (backward's
// and a one-sample chunk's case), where the compiler drops the loop over samples and folds its
// offsets, which measured about 5% of LeNet's backward convolution, and for any count.
[[gnu::always_inline]] inline void im2col_dispatch(const Conv2dGeometry& g, const float* x,
                                                   const float* x_end, int samples, float* col,
                                                   std::size_t row_stride) {
  if (unit_stride_unpadded(g) && g.out_width <= kNarrowPiece) {
    im2col_unit_stride_unpadded<kNarrowPiece>(g, x, x_end, samples, col, row_stride);
  } else if (unit_stride_unpadded(g)) {
    im2col_unit_stride_unpadded<kWidePiece>(g, x, x_end, samples, col, row_stride);
  } else if (g.stride_width == 1) {
    im2col<1>(g, x, samples, col, row_stride);
  } else if (g.stride_width == 2) {
    im2col<2>(g, x, samples, col, row_stride);
  } else {
    im2col<0>(g, x, samples, col, row_stride);
  }
}

[[gnu::always_inline]] inline void col2im_dispatch(const Conv2dGeometry& g, const float* dcol,
                                                   int samples, std::size_t row_stride, float* dx) {
  if (unit_stride_unpadded(g) && g.out_width % kNarrowPiece == 0) {
    col2im_unit_stride_unpadded<kNarrowPiece>(g, dcol, samples, row_stride, dx);
  } else if (unit_stride_unpadded(g)) {
    col2im_unit_stride_unpadded<0>(g, dcol, samples, row_stride, dx);
  } else if (g.stride_width == 1) {
    col2im<1>(g, dcol, samples, row_stride, dx);
  } else if (g.stride_width == 2) {
    col2im<2>(g, dcol, samples, row_stride, dx);
  } else {
    col2im<0>(g, dcol, samples, row_stride, dx);
  }
}

}  // namespace

void im2col_any(const Conv2dGeometry& g, const float* x, const float* x_end, int samples,
                float* col, std::size_t row_stride) {
  if (samples == 1) return im2col_dispatch(g, x, x_end, 1, col, row_stride);
  im2col_dispatch(g, x, x_end, samples, col, row_stride);
}

void col2im_any(const Conv2dGeometry& g, const float* dcol, int samples, std::size_t row_stride,
                float* dx) {
  if (samples == 1) return col2im_dispatch(g, dcol, 1, row_stride, dx);
  col2im_dispatch(g, dcol, samples, row_stride, dx);
}

void im2row_any(const Conv2dGeometry& g, const float* x, const float* x_end, float* col_t,
                float* scratch) {
  if (unit_stride_unpadded(g) && g.kernel_width <= kNarrowPiece) {
    return im2row_unit_stride_unpadded(g, x, x_end, col_t);
  }
  const std::size_t k = static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  const std::size_t ohw = static_cast<std::size_t>(g.out_height) * g.out_width;
  im2col_any(g, x, x_end, 1, scratch, ohw);
  transpose_columns(scratch, k, ohw, col_t);
}

}  // namespace conv_detail
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
