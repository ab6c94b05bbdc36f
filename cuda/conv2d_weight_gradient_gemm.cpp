// CudaBackend's convolution weight gradient: columns and channel-major dy per chunk of
// samples (ops/conv2d_weight_gradient.hpp says why and in which order), one cuBLAS sgemm each.
#include <cublas_v2.h>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "library_check.hpp"
#include "ops/conv2d_weight_gradient.hpp"

namespace dl::gpu {

std::size_t CudaBackend::weight_gradient_workspace_floats(const Conv2dGeometry& g) const {
  // Counted in floats also for 16-bit values (then half of it is used), to keep one layout.
  return weight_gradient_chunks(g).workspace_floats();
}

void CudaBackend::conv2d_weight_gradient(const Conv2dGeometry& g, const float* x, const float* dy,
                                         float* dw, float* workspace) {
  const WeightGradientChunks chunks = weight_gradient_chunks(g);
  float* columns = workspace;
  float* channel_major = workspace + chunks.column_floats;
  const int window = g.in_channels * g.kernel_height * g.kernel_width;
  const int outputs = g.out_height * g.out_width;
  const float one = 1.0f, zero = 0.0f;
  for (int first = 0; first < g.batch; first += chunks.samples) {
    const int samples = std::min(chunks.samples, g.batch - first);
    // Column-major view: dw^T (window x out) = columns (row-major window x k, so op T) times
    // channel_major^T (row-major out x k), with k = samples * outputs.
    const int k = samples * outputs;
    if (half_format_) {
      launch_convolution_columns_to_half_format(*half_format_, g, first, samples, x, columns,
                                                limits_, stream_.get());
      launch_channel_major_to_half_format(*half_format_, g, first, samples, dy, channel_major,
                                          limits_, stream_.get());
      gemm_half_format(true, false, window, g.out_channels, k, columns, k, channel_major, k,
                       first > 0, dw, window);
      continue;
    }
    launch_convolution_columns(g, first, samples, x, columns, limits_, stream_.get());
    launch_channel_major(g, first, samples, dy, channel_major, limits_, stream_.get());
    DL_CUBLAS_CALL(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, window, g.out_channels, k,
                               &one, columns, k, channel_major, k, first == 0 ? &zero : &one, dw,
                               window));
  }
}

}  // namespace dl::gpu
