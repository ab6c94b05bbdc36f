// The input pipeline's batch transform, shared by the host loader (src/data/input_pipeline.hpp),
// the CPU backend and the CUDA kernel (see README.md in this folder), so that a batch gathered on
// any of them has the same bits:
//
//  - augmentation (training batches only): a crop of the original size from the image
//    zero-padded by `crop_padding` pixels on each side, then a horizontal flip. The draws of
//    sample `index` (its index in the training set) in epoch `epoch` are counters
//    3*index .. 3*index+2 of RandomStream(seed, kAugmentationStreamBase + epoch): flip =
//    below(2), then the crop's row and column offsets below(2*crop_padding+1). They are a pure
//    function of (seed, epoch, index): not of the sample's position in the epoch, the worker or
//    the device that gathers it, so a resumed run draws what the uninterrupted one drew.
//  - the pixel: byte b becomes float(b) / kLargestPixel (a padded pixel is 0), then with
//    normalization (v - mean[c]) / std[c]: one IEEE subtraction and two IEEE divisions, rounded
//    to nearest, which no device rounds differently (the kernel names them __fdiv_rn).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/ops/gather.hpp"
#include "core/random.hpp"

namespace dl::ops {

// Stream ids of the augmentation draws, one per epoch: apart from the epoch orders and the
// validation split.
inline constexpr std::uint64_t kAugmentationStreamBase = 0x4155474d00000000ull;
inline constexpr std::uint64_t kAugmentDrawsPerSample = 3;

// What gather_transformed does to each sample of channels x rows x cols bytes (NCHW).
struct SampleTransform {
  int channels = 1, rows = 1, cols = 1;
  bool augment = false;  // draw crops and flips (training batches); false: none
  int crop_padding = 0;  // 0: the crop is the image itself
  bool horizontal_flip = false;
  bool normalize = false;  // per-channel (v - mean) / std
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;

  constexpr std::size_t plane() const {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  }
  constexpr std::size_t sample_bytes() const {
    return static_cast<std::size_t>(channels) * plane();
  }
};

struct AugmentDraw {
  bool flip = false;
  int dy = 0, dx = 0;  // the crop's top-left corner in the padded image
};

// The draw of training sample `index` (none when !t.augment).
constexpr AugmentDraw augment_draw(const SampleTransform& t, std::int64_t index) {
  AugmentDraw d;
  if (!t.augment) return d;
  RandomStream rng(t.seed, kAugmentationStreamBase + static_cast<std::uint64_t>(t.epoch),
                   static_cast<std::uint64_t>(index) * kAugmentDrawsPerSample);
  const bool flip = rng.below(2) == 1;
  const auto span = static_cast<std::uint64_t>(2 * t.crop_padding + 1);
  d.dy = static_cast<int>(rng.below(span));
  d.dx = static_cast<int>(rng.below(span));
  d.flip = t.horizontal_flip && flip;
  return d;
}

// The offset in its channel plane of the byte that output pixel (y, x) shows, or -1 where the
// crop reaches into the padding.
constexpr std::int64_t augment_source(const SampleTransform& t, const AugmentDraw& d, int y,
                                      int x) {
  const int pad = t.augment ? t.crop_padding : 0;
  const int sy = y + d.dy - pad;
  const int sx = (d.flip ? t.cols - 1 - x : x) + d.dx - pad;
  if (sy < 0 || sy >= t.rows || sx < 0 || sx >= t.cols) return -1;
  return static_cast<std::int64_t>(sy) * t.cols + sx;
}

// The host's arithmetic of one output value (`byte` -1: padding). The CUDA kernel performs the
// same operations with __fdiv_rn.
inline float transformed_value(int byte, bool normalize, float mean, float sd) {
  const float v = byte >= 0 ? static_cast<float>(byte) / kLargestPixel : 0.0f;
  return normalize ? (v - mean) / sd : v;
}

// One sample on the host: `src` is its sample_bytes() bytes, `dst` its floats; mean and sd hold
// one value per channel (unread without normalization).
inline void transform_sample(const std::uint8_t* src, const SampleTransform& t,
                             const AugmentDraw& d, const float* mean, const float* sd, float* dst) {
  const std::size_t plane = t.plane();
  for (int c = 0; c < t.channels; ++c) {
    const std::uint8_t* in = src + static_cast<std::size_t>(c) * plane;
    float* out = dst + static_cast<std::size_t>(c) * plane;
    const float m = t.normalize ? mean[c] : 0.0f;
    const float s = t.normalize ? sd[c] : 1.0f;
    for (int y = 0; y < t.rows; ++y) {
      for (int x = 0; x < t.cols; ++x) {
        const std::int64_t at = augment_source(t, d, y, x);
        out[static_cast<std::size_t>(y) * t.cols + x] =
            transformed_value(at >= 0 ? in[at] : -1, t.normalize, m, s);
      }
    }
  }
}

}  // namespace dl::ops
