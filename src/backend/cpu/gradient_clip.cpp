#include "backend/cpu/gradient_clip.hpp"

#include "backend/cpu/thread_pool.hpp"
#include "backend/gradient_clip_math.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Both treat each element on its own, so splitting them over threads changes no bit.
void clip_values(std::size_t n, float limit, float* x) {
  parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) x[i] = clip_value(x[i], limit);
  });
}

void scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold, bool always,
                   float* x) {
  const float factor = norm_scale_factor(sum_of_squares[0], threshold, always);
  if (factor == 1.0f) return;
  parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) x[i] *= factor;
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
