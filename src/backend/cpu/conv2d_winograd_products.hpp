// The Winograd domain's per-position products whose columns are tiles (conv2d_winograd.hpp):
// C = A B with B and C rows of `tiles` floats (a multiple of the lanes), A rows x k read through
// strides, so that U and its transpose are the same array. K is a layer's channel count (tens),
// too short for a library product to amortize its packing; here a block of A's rows times a few
// lane vectors of B stays in registers for the whole sum.
#pragma once

#include <cstddef>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// C[i][t] = sum over q < k of A(i, q) * B[q][t], A(i, q) = a[i * a_row + q * a_col], for i < rows
// and t < tiles; B and C have rows of `tiles` floats, taken `lanes` (8 or 16) at a time.
void lanes_product(int lanes, int rows, int k, const float* a, int a_row, int a_col, const float* b,
                   float* c, std::size_t tiles);

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
