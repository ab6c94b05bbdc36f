// CPU implementation of the Backend's flat-buffer arithmetic ops (see backend/backend.hpp for
// the contract). sum_of_squares accumulates in double and writes a float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void scale(std::size_t n, float alpha, float* x);
void axpy(std::size_t n, float alpha, const float* x, float* y);
void sum_of_squares(std::size_t n, const float* x, float* result);
bool all_finite(std::size_t n, const float* x);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
