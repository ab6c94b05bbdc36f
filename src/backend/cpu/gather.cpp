#include "backend/cpu/gather.hpp"

namespace dl::cpu {

void gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                    std::size_t sample_bytes, const std::int32_t* indices, int n, float* images,
                    std::int32_t* batch_labels) {
  for (int i = 0; i < n; ++i) {
    const std::size_t sample = static_cast<std::size_t>(indices[i]);
    const std::uint8_t* src = pixels + sample * sample_bytes;
    float* dst = images + static_cast<std::size_t>(i) * sample_bytes;
    for (std::size_t p = 0; p < sample_bytes; ++p)
      dst[p] = static_cast<float>(src[p]) / kLargestPixel;
    batch_labels[i] = labels[sample];
  }
}

void gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                        const ops::SampleTransform& t, const std::int32_t* indices, int n,
                        const float* channel_mean, const float* channel_std, float* images,
                        std::int32_t* batch_labels) {
  const std::size_t sample_bytes = t.sample_bytes();
  for (int i = 0; i < n; ++i) {
    const std::int32_t sample = indices[i];
    const std::uint8_t* src = pixels + static_cast<std::size_t>(sample) * sample_bytes;
    float* dst = images + static_cast<std::size_t>(i) * sample_bytes;
    ops::transform_sample(src, t, ops::augment_draw(t, sample), channel_mean, channel_std, dst);
    batch_labels[i] = labels[sample];
  }
}

}  // namespace dl::cpu
