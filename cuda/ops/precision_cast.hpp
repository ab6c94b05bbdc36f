// The 16-bit formats of mixed precision (Config::dtype HALF or BFLOAT16) and the casts between
// them and float32 (precision_cast.cu). Only the tensor-core inputs of the convolutions and the
// dense products are 16-bit; everything the Backend interface passes stays float32.
//
// float32 -> 16-bit rounds to nearest, ties to even (IEEE's default): a value whose magnitude
// rounds above the format's largest finite value becomes infinity (half: above 65504), NaN stays
// NaN. 16-bit -> float32 is exact.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>
#include <optional>

#include "core/kinds.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

enum class HalfFormat { kHalf, kBFloat16 };

// Bytes of one 16-bit value (__half and __nv_bfloat16 alike).
inline constexpr std::size_t kHalfBytes = 2;

// The 16-bit format a config's dtype asks for; none for FLOAT.
inline std::optional<HalfFormat> half_format_of(DType dtype) {
  switch (dtype) {
    case DType::kHalf:
      return HalfFormat::kHalf;
    case DType::kBFloat16:
      return HalfFormat::kBFloat16;
    case DType::kFloat:
      return std::nullopt;
  }
  return std::nullopt;
}

// cuBLAS's name for the format.
inline cudaDataType_t cuda_data_type(HalfFormat f) {
  return f == HalfFormat::kHalf ? CUDA_R_16F : CUDA_R_16BF;
}

// dst[i] = x[i] rounded to the format, for i < n. dst holds n 16-bit values.
void launch_cast_to_half_format(HalfFormat f, std::size_t n, const float* x, void* dst,
                                const LaunchLimits& limits, cudaStream_t stream);
// dst[i] = src[i] as float32 (exact), for i < n.
void launch_cast_to_float(HalfFormat f, std::size_t n, const void* src, float* dst,
                          const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
