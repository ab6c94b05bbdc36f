// CPU implementation of the Backend's convolution ops (see backend/backend.hpp for the contract).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/samples_hook.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// im2col over small chunks of the minibatch and one single-threaded sgemm per chunk and pass, in
// tasks cut by the layer's size (conv2d.cpp); stride-1 layers with few input channels take the
// direct path instead (conv2d_direct.hpp; its dx is the columns path's), stride-1 3x3 and 5x5
// layers with many input channels the Winograd domain for y, dx, dW and db
// (conv2d_winograd.hpp). The workspace holds the backward tasks' partial dW and db; backward
// recomputes the columns from x, so it does not depend on what forward left there.
std::size_t conv2d_workspace_floats(const Conv2dGeometry& g);
// `done` is called on each forward task's samples once their y is complete; with dy_of, each
// weight-gradient task takes its samples' dy from it instead of from dy, only with dx null (where
// no other task reads dy). samples_hook.hpp; the fused ops of conv2d_pool.hpp use them.
void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                    float* y, float* workspace, const SamplesHook& done = {});
void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db, float* workspace,
                     const DyOfSamples& dy_of = {});

// The columns path alone, whatever the geometry (conv2d_forward and conv2d_backward take the
// direct or the Winograd path where it applies): for tests and comparisons, the direct path's dx
// and the Winograd path's dW. Its backward skips dw and db when dw is null.
std::size_t conv2d_columns_workspace_floats(const Conv2dGeometry& g);
void conv2d_forward_columns(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                            float* y, float* workspace, const SamplesHook& done = {});
void conv2d_backward_columns(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* dy, float* dx, float* dw, float* db, float* workspace);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
