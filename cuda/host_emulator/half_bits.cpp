// float32 <-> half and bfloat16 for the host grid, rounding to nearest even as CUDA's
// __float2half_rn and __float2bfloat16_rn do; tests/cuda/cuda_kernels_on_host.cpp checks them
// against an independent reference over every 16-bit pattern and the rounding edge cases.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "host_grid.hpp"

namespace dl::emu {

namespace {

std::uint32_t bits_of(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float float_of(std::uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

constexpr std::uint32_t kAbsMask = 0x7fffffffu;
constexpr std::uint32_t kFloatInf = 0x7f800000u;
constexpr std::uint32_t kHalfOverflow = 0x47800000u;   // 65536: beyond the largest half binade
constexpr std::uint32_t kHalfMinNormal = 0x38800000u;  // 2^-14

}  // namespace

std::uint16_t float_to_half_bits(float v) {
  const std::uint32_t x = bits_of(v);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & kAbsMask;
  if (magnitude > kFloatInf) return sign | 0x7e00u;  // NaN stays (a quiet) NaN
  if (magnitude >= kHalfOverflow) return sign | 0x7c00u;
  if (magnitude < kHalfMinNormal) {
    // Subnormal half: a multiple of 2^-24. The scaling is exact; nearbyint rounds half to even.
    const float scaled = float_of(magnitude) * 0x1p24f;
    return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
  }
  const std::uint32_t exponent = (magnitude >> 23) - 127 + 15;
  const std::uint32_t mantissa = magnitude & 0x7fffffu;
  std::uint32_t h = (exponent << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa steps the exponent, up to infinity: that is the rounding too.
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<std::uint16_t>(h);
}

float half_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exponent == 0x1f) return float_of(sign | kFloatInf | (mantissa << 13));
  return float_of(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bfloat16_bits(float v) {
  const std::uint32_t x = bits_of(v);
  if ((x & kAbsMask) > kFloatInf) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

float bfloat16_bits_to_float(std::uint16_t bits) {
  return float_of(static_cast<std::uint32_t>(bits) << 16);
}

}  // namespace dl::emu
