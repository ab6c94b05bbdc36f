// CPU implementation of the Backend's activation ops (see backend/backend.hpp for the contract).
// The elementwise math is the op contract's (backend/ops/activation.hpp); softmax works per row
// of `cols` values (the row maximum is subtracted before exp, so no input overflows) and its
// backward reads y: dx = y * (dy - sum_j dy_j y_j). Backward takes the forward input x (null
// allowed unless ops::activation_reads_input) and output y. Both directions work in place
// (x == y, dx == dy) when the activation does not read x.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x, float* y);
void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                         const float* y, const float* dy, float* dx);
// y = act(y + x), elementwise.
void add_activation_forward(Activation a, std::size_t n, const float* x, float* y);
// dy = act's gradient at (x, y) of dy + term (x may be null unless act reads it).
void add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                             const float* term, float* dy);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
