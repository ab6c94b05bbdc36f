// The tile transforms of the 3x3 Winograd layers that keep their plane's size (padding 1, a width
// that is a multiple of the tile edge M: ResNet-20's), on whole plane rows instead of tile windows
// (conv2d_winograd_tiles.cpp takes every other layer). A lane group of L tiles is then
// L / tile_columns whole tile rows, which side by side make a "row group" of M L floats: the same
// row of each tile row, one after another. The input transform's vertical half runs on row groups
// as they lie in memory, and its horizontal half on the group's M phases (floats p, M + p, ...),
// which are the tiles' columns 1 to M; columns 0 and M + 1 are their neighbours' (a lane shift).
// Output tiles' columns 0 to M - 1 are a row's phases. Window gathers and the L x L transposes
// they needed go away: for M = 2, 16 shuffles per lane group and channel instead of about 160
// for an input transform.
//   y, dM, V  the same products and sums per element as the tiles' code, so the same bits.
//   dx        each tile's Btt dV Bt as there; its rows' overlapping columns added in the lanes
//             (tile t's column M + 1 and tile t + 1's column 1), then the rows, in tile-row order:
//             a row's first contribution is stored, so dx needs no zeroing first.
#pragma once

#include "backend/backend.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// 3x3 filters, padding 1 on every side, outputs the input's size, a width that is a multiple of
// the tile edge (tile_outputs) whose tile columns divide the lanes, and whose tile rows' floats
// in a plane row are whole lane vectors or, with 16 lanes, half of one.
bool rows_apply(const Conv2dGeometry& g, int lanes);
// As inputs_to_domain, input_gradients_from_domain, outputs_from_domain and
// output_gradients_to_domain (conv2d_winograd_tiles.hpp), where rows_apply.
void inputs_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v);
void input_gradients_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                      float* dx);
void outputs_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* m,
                              const float* bias, float* y);
void output_gradients_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                     float* dm);

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
