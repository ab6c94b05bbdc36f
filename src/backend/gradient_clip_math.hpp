// The shared math of the gradient-normalization ops (Backend::clip_values, scale_to_norm), used by
// the CPU loops and the CUDA kernels alike so both compute the same bits: the factor comes from
// double-precision sqrt and division, both correctly rounded in IEEE arithmetic on either side.
#pragma once

#include <math.h>

// Marks the helpers callable from CUDA kernels too; only an annotation, no second implementation.
#if defined(__CUDACC__)
#define DL_HOST_DEVICE __host__ __device__
#else
#define DL_HOST_DEVICE
#endif

namespace dl {

// What scale_to_norm multiplies by, given the sum of squares s of the values: threshold / sqrt(s)
// when sqrt(s) > threshold, or with `always` when sqrt(s) > 0 (renormalization to the norm
// `threshold`); 1 otherwise, also for a non-finite s (a NaN stays visible to all_finite).
DL_HOST_DEVICE inline float norm_scale_factor(float sum_of_squares, float threshold, bool always) {
  const double norm = ::sqrt(static_cast<double>(sum_of_squares));
  const bool finite_positive = norm > 0.0 && norm <= 1.7976931348623157e308;  // not inf, not NaN
  if (!finite_positive || (!always && !(norm > static_cast<double>(threshold)))) return 1.0f;
  return static_cast<float>(static_cast<double>(threshold) / norm);
}

// clamp(x, -limit, limit); a NaN stays NaN.
DL_HOST_DEVICE inline float clip_value(float x, float limit) {
  return x > limit ? limit : (x < -limit ? -limit : x);
}

}  // namespace dl
