// The 16-bit formats' parameters for the mixed-precision tests (test_cuda_half_casts.cpp,
// test_cuda_mixed_precision.cpp), and the CUDA backend behind a Backend.
#pragma once

#include <cmath>

#include <catch2/catch.hpp>

#include "core/kinds.hpp"
#include "cuda_backend.hpp"
#include "ops/precision_cast.hpp"

namespace dl::test {

struct FormatTraits {
  DType dtype;
  gpu::HalfFormat format;
  const char* name;
  int significand_bits;  // including the implicit leading bit
  int min_exponent;      // of the smallest normal value
  double max_finite;
  double unit_roundoff;  // 2^-significand_bits
  double min_normal;     // 2^min_exponent
};

inline const FormatTraits kHalfTraits{
    DType::kHalf,         gpu::HalfFormat::kHalf, "HALF", 11, -14, 65504.0,
    std::ldexp(1.0, -11), std::ldexp(1.0, -14)};
inline const FormatTraits kBFloat16Traits{DType::kBFloat16,
                                          gpu::HalfFormat::kBFloat16,
                                          "BFLOAT16",
                                          8,
                                          -126,
                                          (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127),
                                          std::ldexp(1.0, -8),
                                          std::ldexp(1.0, -126)};

inline gpu::CudaBackend& as_cuda(Backend& b) {
  auto* cuda = dynamic_cast<gpu::CudaBackend*>(&b);
  REQUIRE(cuda != nullptr);
  return *cuda;
}

}  // namespace dl::test
