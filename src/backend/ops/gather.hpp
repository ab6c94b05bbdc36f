// The batch gather's pixel scale, shared by the host loader, the CPU backend and the CUDA
// kernel (see README.md in this folder): a pixel byte b becomes float(b) / kLargestPixel, one
// IEEE division rounded to nearest on every device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dl::ops {

inline constexpr float kLargestPixel = 255.0f;

// One sample's n pixel bytes as floats, on the host (the host loader and the CPU backend's
// gather): the division vectorizes, and a correctly rounded division gives every device's bits.
inline void pixels_to_unit(const std::uint8_t* src, std::size_t n, float* dst) {
  for (std::size_t p = 0; p < n; ++p) dst[p] = static_cast<float>(src[p]) / kLargestPixel;
}

// How many samples ahead of the one it converts a host gather asks the memory for: a shuffled
// batch reads samples scattered over the whole data set, each a cache and TLB miss that would
// otherwise be waited for one after the other.
inline constexpr std::size_t kPrefetchSamplesAhead = 4;

// Asks for `bytes` bytes from src ahead of their use, a 64-byte cache line at a time.
inline void prefetch_bytes(const std::uint8_t* src, std::size_t bytes) {
  constexpr std::size_t kCacheLineBytes = 64;
  for (std::size_t offset = 0; offset < bytes; offset += kCacheLineBytes)
    __builtin_prefetch(src + offset);
}

}  // namespace dl::ops
