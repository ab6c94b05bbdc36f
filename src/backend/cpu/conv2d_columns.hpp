// The convolution's layout transforms (conv2d.cpp): im2col copies a chunk of samples' input
// windows into the columns one matrix product consumes, col2im adds a product's columns back into
// the input's gradient.
#pragma once

#include <cstddef>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace conv_detail {

// Floats im2col may write past its last column (its unit-stride copy moves whole SIMD registers);
// the caller's buffer reserves them.
constexpr std::size_t kCopySlack = 16;

// col[(c, i, j)][(n, oh, ow)] = x[n][c][oh*sh + i - pad_top][ow*sw + j - pad_left], zero outside,
// for `samples` samples starting at x, each row of col holding row_stride floats. x_end: the end
// of the whole minibatch's input, which bounds how far a copy may read.
void im2col_any(const Conv2dGeometry& g, const float* x, const float* x_end, int samples,
                float* col, std::size_t row_stride);

// One sample's columns transposed: col_t[(oh, ow)][(c, i, j)], out_h*out_w rows of
// in_channels*kh*kw floats (plus kCopySlack after them), so that the weight gradient is a product
// without transposes, dy * col_t. Geometries other than stride 1 without padding go through
// im2col into `scratch` (as large as col_t) and a transpose.
void im2row_any(const Conv2dGeometry& g, const float* x, const float* x_end, float* col_t,
                float* scratch);

// dx[n][c] = the sum of dcol's entries placed where im2col read them, for `samples` samples
// (overwrites dx).
void col2im_any(const Conv2dGeometry& g, const float* dcol, int samples, std::size_t row_stride,
                float* dx);

}  // namespace conv_detail
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
