// The one place nn/ and config/ compute the geometry of a convolution or pooling window: the
// output-size rule of each convolutionMode, and the backend's Conv2dGeometry of a planned layer.
#pragma once

#include <optional>

#include "backend/backend.hpp"
#include "core/kinds.hpp"

namespace dl {

struct PlannedLayer;

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
std::optional<WindowExtent> window_extent(int in, int kernel, int stride, int padding,
                                          ConvolutionMode mode);

// The backend geometry of a planned convolution or subsampling layer for `batch` samples.
Conv2dGeometry conv2d_geometry(const PlannedLayer& plan, int batch);

}  // namespace dl
