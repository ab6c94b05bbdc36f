#include "backend/cpu/gather.hpp"

#include <algorithm>

#include "backend/cpu/thread_pool.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Samples per task: a batch of 128 makes 8 tasks, more where the threads are more
// (items_per_task), down to kLeastSamplesPerTask. Each sample is written by one task alone, so
// the batch is the same on any thread count.
constexpr int kSamplesPerTask = 16;
constexpr int kLeastSamplesPerTask = 2;

// Calls sample(i) for i in [0, n) in tasks of a few samples, prefetching ahead within a task.
template <class Sample>
void for_each_sample(int n, const std::uint8_t* pixels, std::size_t sample_bytes,
                     const std::int32_t* indices, const Sample& sample) {
  parallel_item_ranges(
      static_cast<std::size_t>(std::max(n, 0)), kSamplesPerTask, kLeastSamplesPerTask, 1,
      [&](std::size_t first, std::size_t last) {
        const int begin = static_cast<int>(first), end = static_cast<int>(last);
        constexpr int kAhead = static_cast<int>(ops::kPrefetchSamplesAhead);
        for (int i = begin; i < end; ++i) {
          if (i + kAhead < end) {
            ops::prefetch_bytes(
                pixels + static_cast<std::size_t>(indices[i + kAhead]) * sample_bytes,
                sample_bytes);
          }
          sample(i);
        }
      });
}

}  // namespace

void gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                    std::size_t sample_bytes, const std::int32_t* indices, int n, float* images,
                    std::int32_t* batch_labels) {
  for_each_sample(n, pixels, sample_bytes, indices, [&](int i) {
    const std::size_t sample = static_cast<std::size_t>(indices[i]);
    const std::uint8_t* src = pixels + sample * sample_bytes;
    ops::pixels_to_unit(src, sample_bytes, images + static_cast<std::size_t>(i) * sample_bytes);
    batch_labels[i] = labels[sample];
  });
}

void gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                        const ops::SampleTransform& t, const std::int32_t* indices, int n,
                        const float* channel_mean, const float* channel_std, float* images,
                        std::int32_t* batch_labels) {
  const std::size_t sample_bytes = t.sample_bytes();
  for_each_sample(n, pixels, sample_bytes, indices, [&](int i) {
    const std::int32_t sample = indices[i];
    const std::uint8_t* src = pixels + static_cast<std::size_t>(sample) * sample_bytes;
    float* dst = images + static_cast<std::size_t>(i) * sample_bytes;
    ops::transform_sample(src, t, ops::augment_draw(t, sample), channel_mean, channel_std, dst);
    batch_labels[i] = labels[sample];
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
