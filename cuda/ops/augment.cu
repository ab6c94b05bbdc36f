// The input pipeline on the device: the device-resident training set's batches cropped, flipped
// and normalized (backend/ops/augment.hpp has the rule and the draws). One grid-stride loop over
// every output value, like gather.cu; each thread recomputes its sample's draw from (seed, epoch,
// sample index), a few integer hashes, rather than reading draws made elsewhere, so the kernel
// needs no buffer and no second launch. The divisions are __fdiv_rn (IEEE, round to nearest,
// whatever nvcc's -prec-div says), the host's divisions: the batch is bit-identical to
// Dataset::gather_training's.
#include "backend/ops/augment.hpp"
#include "cuda_check.hpp"
#include "ops/augment.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

// Index: std::uint32_t or std::size_t, the flat index's type (with_index_type): the three
// divisions per value are much cheaper in 32 bits.
template <typename Index>
__global__ void gather_transformed_kernel(const std::uint8_t* pixels, const std::int32_t* labels,
                                          ops::SampleTransform t, const std::int32_t* indices,
                                          std::size_t n, const float* channel_mean,
                                          const float* channel_std, float* images,
                                          std::int32_t* batch_labels) {
  const Index sample_bytes = static_cast<Index>(t.sample_bytes());
  const Index plane = static_cast<Index>(t.plane());
  const Index cols = static_cast<Index>(t.cols);
  const Index values = static_cast<Index>(n) * sample_bytes;
  for (Index i = first_index(); i < values; i += grid_stride()) {
    const Index row = i / sample_bytes;
    const Index within = i - row * sample_bytes;
    const Index c = within / plane;
    const Index at = within - c * plane;
    const Index y = at / cols;
    const std::int32_t sample = indices[row];
    const std::int64_t source = ops::augment_source(
        t, ops::augment_draw(t, sample), static_cast<int>(y), static_cast<int>(at - y * cols));
    float v = 0.0f;
    if (source >= 0) {
      const std::uint8_t byte =
          pixels[static_cast<std::size_t>(sample) * t.sample_bytes() +
                 static_cast<std::size_t>(c) * t.plane() + static_cast<std::size_t>(source)];
      v = __fdiv_rn(static_cast<float>(byte), ops::kLargestPixel);
    }
    if (t.normalize) v = __fdiv_rn(v - channel_mean[c], channel_std[c]);
    images[i] = v;
  }
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    batch_labels[i] = labels[indices[i]];
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                               const ops::SampleTransform& t, const std::int32_t* indices, int n,
                               const float* channel_mean, const float* channel_std, float* images,
                               std::int32_t* batch_labels, const LaunchLimits& limits,
                               cudaStream_t stream) {
  if (n <= 0) return;
  const std::size_t rows = static_cast<std::size_t>(n);
  const int block = limits.block();
  const std::size_t values = rows * t.sample_bytes();
  with_index_type(values, [&](auto index) {
    gather_transformed_kernel<decltype(index)><<<limits.grid(values, block), block, 0, stream>>>(
        pixels, labels, t, indices, rows, channel_mean, channel_std, images, batch_labels);
    DL_CUDA_LAUNCHED(gather_transformed_kernel);
  });
}

}  // namespace dl::gpu
