// Batch gathering from a device-resident data set. One grid-stride loop over every output value
// of the batch, so consecutive threads write consecutive floats of one image whatever the image
// size. The conversion is __fdiv_rn (IEEE division, round to nearest, whatever nvcc's
// -prec-div says), the very division the host performs: the batch is bit-identical to
// Dataset::gather's.
#include "backend/ops/gather.hpp"
#include "cuda_check.hpp"
#include "ops/gather.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

// Index: std::uint32_t or std::size_t, the flat index's type (with_index_type).
template <typename Index>
__global__ void gather_samples_kernel(const std::uint8_t* pixels, const std::int32_t* labels,
                                      std::size_t sample_bytes, const std::int32_t* indices,
                                      std::size_t n, float* images, std::int32_t* batch_labels) {
  const Index values = static_cast<Index>(n * sample_bytes);
  const Index row_bytes = static_cast<Index>(sample_bytes);
  for (Index i = first_index(); i < values; i += grid_stride()) {
    const Index row = i / row_bytes;
    const std::size_t pixel = i - row * row_bytes;
    const std::size_t sample = static_cast<std::size_t>(indices[row]);
    images[i] =
        __fdiv_rn(static_cast<float>(pixels[sample * sample_bytes + pixel]), ops::kLargestPixel);
  }
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    batch_labels[i] = labels[indices[i]];
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                           std::size_t sample_bytes, const std::int32_t* indices, int n,
                           float* images, std::int32_t* batch_labels, const LaunchLimits& limits,
                           cudaStream_t stream) {
  if (n <= 0) return;
  const std::size_t rows = static_cast<std::size_t>(n);
  const int block = limits.block();
  with_index_type(rows * sample_bytes, [&](auto index) {
    gather_samples_kernel<decltype(index)>
        <<<limits.grid(rows * sample_bytes, block), block, 0, stream>>>(
            pixels, labels, sample_bytes, indices, rows, images, batch_labels);
    DL_CUDA_LAUNCHED(gather_samples_kernel);
  });
}

}  // namespace dl::gpu
