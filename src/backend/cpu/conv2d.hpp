// CPU implementation of the Backend's convolution ops (see backend/backend.hpp for the contract).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace dl::cpu {

// im2col over small chunks of the minibatch and one single-threaded sgemm per chunk and pass, in
// tasks cut by the layer's size (conv2d.cpp). The workspace holds the backward tasks' partial dW
// and db; backward recomputes the columns from x, so it does not depend on what forward left there.
// The layer's path: the Winograd domain where it applies (conv2d_winograd.hpp), else columns.
std::size_t conv2d_workspace_floats(const Conv2dGeometry& g);
void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                    float* y, float* workspace);
void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db, float* workspace);

// The columns path alone, for any geometry (and for tests of either path against the other).
std::size_t conv2d_columns_workspace_floats(const Conv2dGeometry& g);
void conv2d_columns_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                            float* y, float* workspace);
void conv2d_columns_backward(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* dy, float* dx, float* dw, float* db, float* workspace);

}  // namespace dl::cpu
