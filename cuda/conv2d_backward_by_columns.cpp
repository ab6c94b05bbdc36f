// CudaBackend's convolution backward pass by columns: per chunk of samples the columns and
// channel-major dy, one cuBLAS product for the weight gradient and one for the columns' gradient,
// gathered back into dx (ops/conv2d_columns.hpp says why and in which order).
#include <cublas_v2.h>

#include <algorithm>

#include "cublas_library.hpp"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "library_check.hpp"
#include "ops/conv2d_columns.hpp"

namespace dl::gpu {

std::size_t CudaBackend::backward_by_columns_workspace_floats(const Conv2dGeometry& g) const {
  // Counted in floats also for 16-bit values (then half of it is used), to keep one layout; the
  // columns' gradient is float32 and takes the columns' place.
  return column_chunks(g).workspace_floats();
}

// Column-major views for cuBLAS, k = samples * outputs:
//   dw^T (window x out)   = columns (row-major window x k, op T) x channel_major^T (row-major
//                           out x k, op N), added over the chunks;
//   gradient^T (k x window) = channel_major^T (op N) x w (row-major out x window, op T).
void CudaBackend::conv2d_backward_by_columns(const Conv2dGeometry& g, const float* x,
                                             const float* w, const float* dy, float* dx, float* dw,
                                             float* workspace) {
  if (g.batch <= 0) {  // no samples: a zero gradient, as the CPU backend gives
    DL_CUDA_CALL(cudaMemsetAsync(dw, 0,
                                 static_cast<std::size_t>(g.out_channels) * g.in_channels *
                                     g.kernel_height * g.kernel_width * sizeof(float),
                                 stream_.get()));
    return;
  }
  const ColumnChunks chunks = column_chunks(g);
  float* columns = workspace;  // then the columns' gradient
  float* channel_major = workspace + chunks.column_floats;
  float* weights16 = channel_major + chunks.gradient_floats;
  const int window = g.in_channels * g.kernel_height * g.kernel_width;
  const int outputs = g.out_height * g.out_width;
  const float one = 1.0f, zero = 0.0f;
  if (half_format_ && dx != nullptr)
    launch_cast_to_half_format(*half_format_, chunks.weight_floats, w, weights16, limits_,
                               stream_.get());
  for (int first = 0; first < g.batch; first += chunks.samples) {
    const int samples = std::min(chunks.samples, g.batch - first);
    const int k = samples * outputs;
    if (half_format_) {
      launch_convolution_columns_to_half_format(*half_format_, g, first, samples, x, columns,
                                                limits_, stream_.get());
      launch_channel_major_to_half_format(*half_format_, g, first, samples, dy, channel_major,
                                          limits_, stream_.get());
      gemm_half_format(true, false, window, g.out_channels, k, columns, k, channel_major, k,
                       first > 0, dw, window);
      if (dx == nullptr) continue;
      gemm_half_format(false, true, k, window, g.out_channels, channel_major, k, weights16, window,
                       false, columns, k);
    } else {
      launch_convolution_columns(g, first, samples, x, columns, limits_, stream_.get());
      launch_channel_major(g, first, samples, dy, channel_major, limits_, stream_.get());
      DL_CUBLAS_CALL(cublas().sgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, window, g.out_channels, k,
                                 &one, columns, k, channel_major, k, first == 0 ? &zero : &one, dw,
                                 window));
      if (dx == nullptr) continue;
      DL_CUBLAS_CALL(cublas().sgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, k, window, g.out_channels,
                                 &one, channel_major, k, w, window, &zero, columns, k));
    }
    launch_columns_to_image(g, first, samples, columns, dx, limits_, stream_.get());
  }
}

}  // namespace dl::gpu
