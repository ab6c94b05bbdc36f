// The Winograd domain's weight-gradient products (conv2d_winograd.hpp): for one position p,
// dU[co][ci] = the sum over a chunk's tiles of dM[co][tile] V[ci][tile]. The tiles are the
// lanes, so each sum is kept as L lane sums over the chunk (a block of sums in registers) and
// its lanes are added once at the end, a block at a time by a halving tree of shuffles: with
// a chunk of 256 tiles, 16 multiply-adds per sum between two such additions.
#pragma once

#include <cstddef>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// Where a product's tiles lie: `runs` runs of `tiles` tiles each (a multiple of the lanes), run
// k's dM and V `run_stride` floats after run k - 1's, channel c's tiles at c * tiles in each.
// The sums go through the runs in order, lane by lane, as through one array holding their tiles
// side by side, so a chunk's tiles cut into runs give the bits of the chunk's tiles in one.
struct TileRuns {
  std::size_t tiles = 0;
  int runs = 1;
  std::size_t run_stride = 0;
};

// du[co * cin + ci] = sum over the runs' tiles t of dm[co * tiles + t] * v[ci * tiles + t]; each
// sum adds its lanes' partial sums in one fixed order.
void lanes_weight_product(int lanes, int cout, int cin, const float* dm, const float* v,
                          const TileRuns& tiles, float* du);

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
