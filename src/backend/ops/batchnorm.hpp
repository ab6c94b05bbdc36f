// Batch normalization's shape, shared by both backends (see README.md in this folder).
#pragma once

#include <string>

#include "core/error.hpp"

namespace dl {

// Batch normalization over n samples of `channels` features, each repeated `spatial` times
// (h*w for images, 1 for flat vectors).
struct BatchNormShape {
  int n = 0, channels = 0, spatial = 1;
};

}  // namespace dl

namespace dl::ops {

inline void check_shape(const BatchNormShape& s) {
  DL_CHECK(s.n > 0 && s.channels > 0 && s.spatial > 0,
           "batch norm shape must be positive, got n=" + std::to_string(s.n) +
               " channels=" + std::to_string(s.channels) + " spatial=" + std::to_string(s.spatial));
}

}  // namespace dl::ops
