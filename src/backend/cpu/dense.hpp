// CPU implementation of the Backend's dense (fully connected) ops (see backend/backend.hpp for the
// contract).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                   float* y);
void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                    float* dx, float* dw, float* db);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
