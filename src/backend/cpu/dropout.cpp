#include "backend/cpu/dropout.hpp"

#include <string>

#include "core/error.hpp"
#include "core/random.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using ops::dropout_key;
using ops::dropout_uniform_from_key;

}  // namespace

float dropout_uniform(std::uint64_t seed, std::uint64_t counter, std::uint64_t i) {
  return dropout_uniform_from_key(dropout_key(seed, counter), i);
}

void dropout_forward(std::size_t n, float retain, std::uint64_t seed, std::uint64_t counter,
                     const float* x, float* y, float* mask) {
  DL_CHECK(retain > 0.0f && retain <= 1.0f,
           "dropout retain probability must lie in (0, 1], got " + std::to_string(retain));
  const std::uint64_t key = dropout_key(seed, counter);
  const float kept_scale = ops::dropout_kept_scale(retain);
  for (std::size_t i = 0; i < n; ++i) {
    const float m = dropout_uniform_from_key(key, i) < retain ? kept_scale : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

void dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
