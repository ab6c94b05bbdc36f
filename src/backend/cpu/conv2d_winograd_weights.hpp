// The Winograd domain's weight-gradient products (conv2d_winograd.hpp): for one position p,
// dU[co][ci] = the sum over a chunk's tiles of dM[co][tile] V[ci][tile]. The tiles are the
// lanes, so each sum is kept as L lane sums over the chunk (a block of L of them in registers)
// and its lanes are added once at the end, L sums at a time by a halving tree of shuffles: with
// a chunk of 256 tiles, 16 multiply-adds per sum between two such additions.
#pragma once

#include <cstddef>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// du[co * cin + ci] = sum over t < tiles of dm[co * tiles + t] * v[ci * tiles + t], tiles a
// multiple of `lanes` (8 or 16); each sum adds its lanes' partial sums in one fixed order.
void lanes_weight_product(int lanes, int cout, int cin, const float* dm, const float* v,
                          std::size_t tiles, float* du);

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
