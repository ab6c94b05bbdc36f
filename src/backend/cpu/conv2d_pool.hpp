// CPU implementation of the Backend's fused convolution, activation and pooling (see
// backend/backend.hpp for the contract). Each convolution task runs the activation and the
// pooling on its own samples as soon as their outputs are complete, and in backward (where no dx
// is asked for: a network's first layer) each weight-gradient task first makes its samples' dy
// from the pooled gradient. Those samples' planes are then in the task's core cache instead of
// making a round trip through memory between two ops: for LeNet's first layer, 5.9 MB at batch
// 128 each way. Where backward does not read the convolution's output (the identity
// activation), forward writes it to the task's thread's buffer instead of y. The activation and
// the pooling treat samples independently, so the results are the unfused ops' bits.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void conv2d_pool_forward(const ConvPool& op, const float* x, const float* w, const float* b,
                         float* y, float* pooled, std::int32_t* argmax, float* workspace);

// The backward without dx (with dx, the convolution's input-gradient tasks read other samples' dy
// than its weight-gradient tasks make, so the ops run one after another: the Backend's default).
// Nothing reads dy after the weight gradient, so it is made per task in the task's thread's
// buffer, and the Backend's dy buffer is left unwritten.
void conv2d_pool_weight_gradient(const ConvPool& op, const float* x, const float* w, const float* y,
                                 const float* pooled, const float* dpooled,
                                 const std::int32_t* argmax, float* dw, float* db,
                                 float* workspace);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
