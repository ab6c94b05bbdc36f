// Where nn/ and config/ compute the geometry of a convolution or pooling window: the output-size
// rule of each convolutionMode (the op contract's, backend/ops/window.hpp), and the backend's
// Conv2dGeometry of a planned layer.
#pragma once

#include <optional>

#include "backend/backend.hpp"
#include "backend/ops/window.hpp"
#include "core/kinds.hpp"

namespace dl {

struct PlannedLayer;

// The output-size rule is the op contract's (backend/ops/window.hpp).
using ops::window_extent;
using ops::WindowExtent;

// The backend geometry of a planned convolution or subsampling layer for `batch` samples.
Conv2dGeometry conv2d_geometry(const PlannedLayer& plan, int batch);

}  // namespace dl
