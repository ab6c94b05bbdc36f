// The direct convolution for stride-1 layers with few input channels (a network's first layer),
// where im2col's columns plus a product with a short inner dimension (LeNet's first layer:
// 25 = 1 x 5 x 5) cost more than the arithmetic itself. conv2d.cpp calls it where
// conv2d_direct_applies; the columns path does the rest, and dx for this path too.
#pragma once

#include <cstddef>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/samples_hook.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Stride 1 and at most kDirectMaxTaps = in_channels * kernel_height * kernel_width, in a build
// for AVX2 with FMA or wider (conv2d_direct_kernels.hpp). The functions below take any stride-1
// geometry on any build, and the tests run them wherever conv2d_forward does not.
bool conv2d_direct_applies(const Conv2dGeometry& g);

// Whether this build's vectors make the direct path pay at all (conv2d_direct_kernels.hpp).
bool conv2d_direct_pays();

// Floats of workspace conv2d_direct_weight_gradient needs (its tasks' partial dW and db).
std::size_t conv2d_direct_workspace_floats(const Conv2dGeometry& g);

// y = conv(x, w) + b; `done` is called on each task's samples once their y is complete.
void conv2d_direct_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                           float* y, const SamplesHook& done = {});

// dw and db (overwritten) from x and dy; the workspace as conv2d_direct_workspace_floats says.
// With dy_of (samples_hook.hpp), each task takes its samples' dy from it instead of from dy.
void conv2d_direct_weight_gradient(const Conv2dGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, float* workspace,
                                   const DyOfSamples& dy_of = {});

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
