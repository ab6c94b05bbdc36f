// CPU implementation of the Backend's dense (fully connected) ops (see backend/backend.hpp for the
// contract).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace dl::cpu {

void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                   float* y);
void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                    float* dx, float* dw, float* db);

}  // namespace dl::cpu
