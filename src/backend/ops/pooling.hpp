// The pooling contract shared by both backends (see README.md in this folder): max pooling's
// argmax holds, for each output, the index of the winning input inside its own (n, c) input
// plane (ih * in_width + iw); among equal inputs the smallest index wins (a row-major visit where
// only a strictly greater value replaces the winner). A window lying wholly in the padding gives
// output 0 and argmax kNoArgmax, and passes no gradient back. Average pooling divides by the
// whole window, padding included.
#pragma once

#include <cstdint>

#include "backend/ops/conv2d.hpp"
#include "backend/ops/window.hpp"

namespace dl::ops {

inline constexpr std::int32_t kNoArgmax = -1;

constexpr float avg_pool_scale(const Pool2dGeometry& g) {
  return 1.0f / static_cast<float>(g.kernel_height * g.kernel_width);
}

}  // namespace dl::ops
