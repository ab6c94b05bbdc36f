// What the loader does to a sample between the file and the model: the pixel bytes b become
// b / 255 as always, then, when configured (data.normalize, data.randomCrop, data.horizontalFlip):
//
//  - training batches only: a random crop of the original size from the image zero-padded by
//    `crop_padding` pixels on each side, then a random horizontal flip (the usual CIFAR recipe);
//  - every batch (training, validation, test, eval, predict): per-channel normalization
//    (x - mean[c]) / std[c], padded pixels included (they are 0 before normalization).
//
// The crop and flip draws and the arithmetic are the op contract's (backend/ops/augment.hpp), which
// the backends' gather_transformed shares: the host loader and the device-resident path give the
// same batch bits. Draws are keyed by (seed, epoch, the sample's index in the training set), so
// the same config gives the same batches for any number of workers and processes, and a resumed
// run draws what the uninterrupted one drew.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/ops/augment.hpp"

namespace dl {

using ops::AugmentDraw;
using ops::kAugmentationStreamBase;

struct InputPipeline {
  std::vector<float> mean, std;  // per channel; empty: no normalization
  int crop_padding = 0;          // 0: no crop
  bool horizontal_flip = false;
  std::uint64_t seed = 0;

  bool augments() const { return crop_padding > 0 || horizontal_flip; }
  bool normalizes() const { return !mean.empty(); }
  bool transforms() const { return augments() || normalizes(); }
  // "normalize mean [..] std [..]; random crop (padding 4); horizontal flip", or "none".
  std::string describe() const;
  // The op contract's transform of samples of this shape: a training batch of `epoch` when
  // `augment` (crops and flips drawn when augments()), else an evaluation batch.
  ops::SampleTransform sample_transform(int channels, int rows, int cols, bool augment,
                                        int epoch) const;
};

AugmentDraw draw_augmentation(const InputPipeline& p, int epoch, std::int64_t index);

// One sample of channels x rows x cols bytes to floats: cropped and flipped by `draw` (none when
// null), then normalized when p.normalizes().
void transform_sample(const std::uint8_t* src, int channels, int rows, int cols,
                      const InputPipeline& p, const AugmentDraw* draw, float* dst);

// Per-channel mean and (population) standard deviation of b / 255 over `pixels` (samples of
// channels planes of `plane` bytes each), from exact byte counts: independent of the order.
struct ChannelStats {
  std::vector<float> mean, std;
};
ChannelStats channel_stats(const std::vector<std::uint8_t>& pixels, int channels,
                           std::size_t plane);
// The same from the counts of each byte value per channel, which add up exactly, so a data set
// too large for memory is counted image by image (data/image_store.hpp) to the same statistics.
inline constexpr int kByteValues = 256;
using ChannelByteCounts = std::vector<std::array<std::uint64_t, kByteValues>>;
ChannelByteCounts channel_byte_counts(const std::uint8_t* pixels, std::size_t size, int channels,
                                      std::size_t plane);
ChannelStats channel_stats(const ChannelByteCounts& counts);

// "m0 m1 m2;s0 s1 s2" for model metadata, and back (throws std::invalid_argument when damaged).
std::string format_normalization(const InputPipeline& p);
void parse_normalization(const std::string& text, InputPipeline& p);

}  // namespace dl
