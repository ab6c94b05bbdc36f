// CPU implementation of the Backend's activation ops (see backend/backend.hpp for the contract).
//
// Forward: identity, relu, leakyrelu (slope kDefaultLeakyReluAlpha below zero), tanh, sigmoid,
// and softmax per row of `cols` values (the row maximum is subtracted before exp, so no input
// overflows). Backward takes the forward *output* y: every derivative here is a function of y,
// which lets the layers keep only one buffer per activation:
//   relu: y > 0 ? 1 : 0          leakyrelu: y > 0 ? 1 : alpha (alpha > 0 keeps the sign of x)
//   tanh: 1 - y^2                sigmoid: y (1 - y)
//   softmax: dx = y * (dy - sum_j dy_j y_j), per row.
// Both directions work in place (x == y, dx == dy).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x, float* y);
void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* y,
                         const float* dy, float* dx);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
