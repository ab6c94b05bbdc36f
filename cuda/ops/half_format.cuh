// Device-side conversions between float32 and the 16-bit storage types, shared by the cast
// kernels and the convolution's fused pad/crop/bias kernels. Each 16-bit type maps to its CUDA
// type; to_storage rounds to nearest even, to_float is exact.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "ops/precision_cast.hpp"

namespace dl::gpu {

template <HalfFormat F>
struct HalfStorage;
template <>
struct HalfStorage<HalfFormat::kHalf> {
  using type = __half;
};
template <>
struct HalfStorage<HalfFormat::kBFloat16> {
  using type = __nv_bfloat16;
};

// Calls body(format) with `f` as a compile-time constant (a std::integral_constant): the one
// place a launcher turns the run-time format into a kernel's template argument. The body names
// the storage type as StorageOf<decltype(format)>.
template <typename Body>
void with_half_format(HalfFormat f, Body&& body) {
  if (f == HalfFormat::kHalf) {
    body(std::integral_constant<HalfFormat, HalfFormat::kHalf>{});
  } else {
    body(std::integral_constant<HalfFormat, HalfFormat::kBFloat16>{});
  }
}
template <typename Format>
using StorageOf = typename HalfStorage<Format::value>::type;

// float32 -> T (float: unchanged; __half, __nv_bfloat16: round to nearest even).
template <typename T>
__device__ inline T to_storage(float v);
template <>
__device__ inline float to_storage<float>(float v) {
  return v;
}
template <>
__device__ inline __half to_storage<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 to_storage<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ inline float to_float(float v) {
  return v;
}
__device__ inline float to_float(__half v) {
  return __half2float(v);
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

}  // namespace dl::gpu
