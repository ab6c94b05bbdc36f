// The window contract of convolution and pooling, shared by src/nn (layer shapes), the CPU
// backend and the CUDA kernels (see README.md in this folder).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/kinds.hpp"

namespace dl::ops {

// One dimension (height or width) of a window sliding over an input.
struct WindowExtent {
  int out = 0;         // output size
  int pad_before = 0;  // zero padding before the first row/column
};

// The output size along one dimension, for kernel >= 1, stride >= 1, padding >= 0:
//  - Truncate: out = (in + 2*padding - kernel) / stride + 1, padding before = padding;
//    nothing when the kernel is larger than the padded input.
//  - Same: out = ceil(in / stride); the total padding max((out-1)*stride + kernel - in, 0) is split
//    with the smaller half before (the extra row, if any, after); `padding` is ignored.
inline std::optional<WindowExtent> window_extent(int in, int kernel, int stride, int padding,
                                                 ConvolutionMode mode) {
  if (mode == ConvolutionMode::kSame) {
    const std::int64_t out = (std::int64_t{in} + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + kernel - in, 0);
    return WindowExtent{static_cast<int>(out), static_cast<int>(total / 2)};
  }
  const std::int64_t padded = std::int64_t{in} + 2 * std::int64_t{padding};
  if (kernel > padded) return std::nullopt;
  return WindowExtent{static_cast<int>((padded - kernel) / stride + 1), padding};
}

// A range of positions along one dimension.
struct Span {
  int begin, end;
};

// The input positions [begin, end) of output o's window, the padding cut off (empty when the
// window lies wholly in the padding).
constexpr Span window_span(int o, int stride, int pad, int kernel, int size) {
  const int start = o * stride - pad;
  const int stop = start + kernel;
  return {start > 0 ? start : 0, stop < size ? stop : size};
}

// The outputs [begin, end] (inclusive; empty when begin > end) whose windows contain input
// position i: the gather form of the windows, for backward passes without atomics.
constexpr Span covering_outputs(int i, int stride, int pad, int kernel, int out_size) {
  const int lowest_start = i + pad - kernel + 1;  // o * stride must be >= this
  const int first = lowest_start <= 0 ? 0 : (lowest_start + stride - 1) / stride;
  const int last = (i + pad) / stride;
  return {first, last < out_size - 1 ? last : out_size - 1};
}

}  // namespace dl::ops
