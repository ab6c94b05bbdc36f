// The allowed ranges of the config's numeric keys that are not fixed by their meaning. Each
// limit is far above any sensible run; it exists so that a typo (an extra zero or three) is
// reported here instead of becoming an allocation failure or an integer overflow later.
#pragma once

#include <cstdint>

namespace dl::config_limits {

inline constexpr int kMaxWorkers = 1024;
inline constexpr int kMaxPrefetchBuffer = 4096;
// data.randomCrop: padding of at most this many pixels on each side.
inline constexpr int kMaxRandomCrop = 1024;
inline constexpr int kMaxBlasThreads = 1024;
// Output units of a dense/output layer or channels of a convolution.
inline constexpr int kMaxLayerWidth = 1 << 20;
// Height or width of an input image, and the largest kernel, stride or padding.
inline constexpr int kMaxSpatialExtent = 1 << 16;
// Values in one sample of a feedForward input, or after flattening an image.
inline constexpr std::int64_t kMaxFeatureSize = std::int64_t{1} << 30;
inline constexpr int kMinClasses = 2;
inline constexpr int kMaxCudaDeviceIndex = 1023;
inline constexpr int kMaxCudaBlockSize = 1024;
// Loss scales: the smallest is fp16's smallest subnormal (2^-24), below which scaling down can no
// longer keep any gradient finite; the largest is float's largest power of two (2^127).
inline constexpr double kMinLossScale = 1.0 / (1 << 24);
inline constexpr double kMaxLossScale = 1.7014118346046923e38;  // 2^127

}  // namespace dl::config_limits
