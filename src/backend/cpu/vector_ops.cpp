#include "backend/cpu/vector_ops.hpp"

#include <cstring>

#include "backend/cpu/thread_pool.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {
// IEEE-754 binary32: a value is inf or NaN exactly when all exponent bits are set.
constexpr std::uint32_t kFloatExponentMask = 0x7F800000u;
}  // namespace

// scale and axpy treat each element on its own, so splitting them over threads changes no bit.
void scale(std::size_t n, float alpha, float* x) {
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    float* __restrict v = x;
    for (std::size_t i = begin; i < end; ++i) v[i] *= alpha;
  });
}

void axpy(std::size_t n, float alpha, const float* x, float* y) {
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    const float* __restrict src = x;
    float* __restrict dst = y;
    for (std::size_t i = begin; i < end; ++i) dst[i] += alpha * src[i];
  });
}

void sum_of_squares(std::size_t n, const float* x, float* result) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  result[0] = static_cast<float>(sum);
}

// Tests the bits instead of calling std::isfinite: branch-free, so the loop vectorizes, and
// immune to compiler flags that assume no NaN.
bool all_finite(std::size_t n, const float* x) {
  std::uint32_t any_non_finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    any_non_finite |= static_cast<std::uint32_t>((bits & kFloatExponentMask) == kFloatExponentMask);
  }
  return any_non_finite == 0;
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
