// CPU implementation of the Backend's pooling ops (see backend/backend.hpp for the contract).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Max pooling's argmax holds, for each output, the index of the winning input inside its own
// (n, c) input plane (ih * in_width + iw); among equal inputs the smallest index wins. A window
// lying entirely in the padding gets output 0 and argmax -1, and passes no gradient back.

void pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                    std::int32_t* argmax);
void pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x, const float* y,
                     const float* dy, float* dx, const std::int32_t* argmax);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
