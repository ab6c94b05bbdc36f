// The tiled path of CPU pooling (pooling.cpp says when it applies and how it works): windows that
// tile the input without overlap or padding, reduced a block of window rows at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace pooling_detail {

// Planes (n, c) of a geometry and the floats of one input and one output plane.
struct Counts {
  std::size_t planes = 0, in_plane = 0, out_plane = 0;
};
Counts counts_of(const Pool2dGeometry& g);

// Whether the tiled path applies: stride == kernel, no padding, the windows inside the input.
bool windows_tile_input(const Pool2dGeometry& g);

void max_forward_tiled(const Pool2dGeometry& g, const float* x, float* y, std::int32_t* argmax);
void avg_forward_tiled(const Pool2dGeometry& g, float scale, const float* x, float* y);
void max_backward_tiled(const Pool2dGeometry& g, const float* dy, const std::int32_t* argmax,
                        float* dx);
void avg_backward_tiled(const Pool2dGeometry& g, float scale, const float* dy, float* dx);

}  // namespace pooling_detail
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
