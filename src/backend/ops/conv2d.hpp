// The convolution's geometry (also pooling's), shared by src/nn and both backends (see
// README.md in this folder). The output size of a geometry follows window.hpp.
#pragma once

#include <cstddef>
#include <string>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"

namespace dl {

struct Conv2dGeometry {
  int batch = 0;
  int in_channels = 0, in_height = 0, in_width = 0;
  int out_channels = 0, out_height = 0, out_width = 0;
  int kernel_height = 0, kernel_width = 0;
  int stride_height = 1, stride_width = 1;
  // Zero padding before the first row/column. Padding after the last row/column is whatever the
  // output size implies, so ConvolutionMode::Same's asymmetric padding needs no extra fields.
  int pad_top = 0, pad_left = 0;
};

// Pooling uses the same geometry with in_channels == out_channels.
using Pool2dGeometry = Conv2dGeometry;

// A convolution, its activation and the pooling layer right after it: the shape of the Backend's
// fused ops (conv2d_pool_forward, conv2d_pool_backward). The pooling reads the activation's
// output, whose gradient the backward pass writes.
struct ConvPool {
  Conv2dGeometry conv;
  Activation activation = Activation::kIdentity;
  Pool2dGeometry pool;
  PoolingType pooling = PoolingType::kMax;
};

}  // namespace dl

namespace dl::ops {

// Image planes (sample x channel) of a pooling geometry's input, and of its output.
constexpr int pool_planes(const Pool2dGeometry& g) {
  return g.batch * g.in_channels;
}

// Every size positive, strides positive, padding non-negative: what any backend may assume.
inline void check_geometry(const Conv2dGeometry& g) {
  DL_CHECK(g.batch >= 0 && g.in_channels > 0 && g.in_height > 0 && g.in_width > 0 &&
               g.out_channels > 0 && g.out_height > 0 && g.out_width > 0 && g.kernel_height > 0 &&
               g.kernel_width > 0 && g.stride_height > 0 && g.stride_width > 0 && g.pad_top >= 0 &&
               g.pad_left >= 0,
           "convolution geometry out of range: batch " + std::to_string(g.batch) + ", in " +
               std::to_string(g.in_channels) + "x" + std::to_string(g.in_height) + "x" +
               std::to_string(g.in_width) + ", out " + std::to_string(g.out_channels) + "x" +
               std::to_string(g.out_height) + "x" + std::to_string(g.out_width));
}

// The pooling's input is the convolution's output, sample for sample.
inline void check_conv_pool(const ConvPool& op) {
  check_geometry(op.conv);
  check_geometry(op.pool);
  DL_CHECK(op.pool.batch == op.conv.batch && op.pool.in_channels == op.conv.out_channels &&
               op.pool.out_channels == op.pool.in_channels &&
               op.pool.in_height == op.conv.out_height && op.pool.in_width == op.conv.out_width,
           "a fused convolution and pooling need the pooling's input to be the convolution's "
           "output");
  // The fused op keeps y, not the pre-activation (Model fuses only such convolutions).
  DL_CHECK(!activation_reads_input(op.activation),
           "a fused convolution and pooling take only activations whose gradient reads y");
}

// Whether a fused op's backward reads the convolution's output y, where the pooling's gradient
// takes max pooling's winners from argmax (and average pooling's from nothing): for the
// activation's gradient alone.
inline bool conv_pool_backward_reads_output(const ConvPool& op) {
  return op.activation != Activation::kIdentity;
}

// Floats of one sample's convolution output (the pooling's input).
inline std::size_t conv_output_per_sample(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.out_height * g.out_width;
}

}  // namespace dl::ops
