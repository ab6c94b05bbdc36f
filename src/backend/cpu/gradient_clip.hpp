// CPU implementation of the Backend's gradient-normalization ops (contract: backend/backend.hpp,
// math: backend/gradient_clip_math.hpp).
#pragma once

#include <cstddef>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void clip_values(std::size_t n, float limit, float* x);
void scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold, bool always,
                   float* x);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
