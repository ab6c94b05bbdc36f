// Batch normalization, one block per channel (grid-stride over channels). A channel's m = n *
// spatial values are strided in NCHW: value j of channel c is sample j / spatial, position
// j % spatial. The block reduces them in double (two passes for the variance, as on the CPU),
// then applies y = x * scale + shift with the per-channel scale and shift in float.
#include <cmath>

#include "cuda_check.hpp"
#include "ops/batchnorm.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// Offset of value j of channel c. Index (std::uint32_t or std::size_t, with_index_type over the
// channel's n * spatial values) is the type of the per-element division.
template <typename Index>
__device__ std::size_t channel_offset(const BatchNormShape& d, int c, Index j) {
  const Index spatial = static_cast<Index>(d.spatial);
  const std::size_t sample = j / spatial;
  const std::size_t position = j % spatial;
  return (sample * d.channels + c) * d.spatial + position;
}

// Values per channel: the range of the kernels' per-channel loops.
__host__ __device__ std::size_t per_channel(const BatchNormShape& d) {
  return static_cast<std::size_t>(d.n) * d.spatial;
}

// ---- kernels ----------------------------------------------------------------------------------

template <typename Index>
__global__ void batchnorm_training_kernel(BatchNormShape d, float eps, float decay, const float* x,
                                          const float* gamma, const float* beta, float* y,
                                          float* running_mean, float* running_var, float* save_mean,
                                          float* save_inv_std) {
  __shared__ double sum_shared[kWarpLanes];
  const Index m = static_cast<Index>(per_channel(d));
  const double count = static_cast<double>(m);
  const double unbias = m > 1 ? count / (count - 1.0) : 1.0;
  for (int c = blockIdx.x; c < d.channels; c += gridDim.x) {
    double sum = 0.0;
    for (Index j = threadIdx.x; j < m; j += blockDim.x) sum += x[channel_offset(d, c, j)];
    const double mean = block_sum(sum, sum_shared) / count;
    double squared = 0.0;
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const double diff = x[channel_offset(d, c, j)] - mean;
      squared += diff * diff;
    }
    const double var = block_sum(squared, sum_shared) / count;
    const double inv_std = 1.0 / sqrt(var + eps);
    const float scale = static_cast<float>(gamma[c] * inv_std);
    const float shift = static_cast<float>(beta[c] - mean * gamma[c] * inv_std);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      y[at] = x[at] * scale + shift;
    }
    if (threadIdx.x == 0) {
      save_mean[c] = static_cast<float>(mean);
      save_inv_std[c] = static_cast<float>(inv_std);
      running_mean[c] = static_cast<float>(decay * running_mean[c] + (1.0 - decay) * mean);
      running_var[c] = static_cast<float>(decay * running_var[c] + (1.0 - decay) * var * unbias);
    }
  }
}

template <typename Index>
__global__ void batchnorm_inference_kernel(BatchNormShape d, float eps, const float* x,
                                           const float* gamma, const float* beta,
                                           const float* running_mean, const float* running_var,
                                           float* y) {
  const Index m = static_cast<Index>(per_channel(d));
  for (int c = blockIdx.x; c < d.channels; c += gridDim.x) {
    const double inv_std = 1.0 / sqrt(static_cast<double>(running_var[c]) + eps);
    const float scale = static_cast<float>(gamma[c] * inv_std);
    const float shift = static_cast<float>(beta[c] - running_mean[c] * gamma[c] * inv_std);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      y[at] = x[at] * scale + shift;
    }
  }
}

template <typename Index>
__global__ void batchnorm_backward_kernel(BatchNormShape d, const float* x, const float* dy,
                                          const float* gamma, const float* save_mean,
                                          const float* save_inv_std, float* dx, float* dgamma,
                                          float* dbeta) {
  __shared__ double sum_shared[kWarpLanes];
  const Index m = static_cast<Index>(per_channel(d));
  const double count = static_cast<double>(m);
  for (int c = blockIdx.x; c < d.channels; c += gridDim.x) {
    const float mean = save_mean[c];
    const float inv_std = save_inv_std[c];
    double sum_dy = 0.0;
    double sum_dy_xhat = 0.0;
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      sum_dy += dy[at];
      sum_dy_xhat += static_cast<double>(dy[at]) * ((x[at] - mean) * inv_std);
    }
    sum_dy = block_sum(sum_dy, sum_shared);
    sum_dy_xhat = block_sum(sum_dy_xhat, sum_shared);
    const float a = gamma[c] * inv_std;
    const float mean_dy = static_cast<float>(sum_dy / count);
    const float mean_dy_xhat = static_cast<float>(sum_dy_xhat / count);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      const float xhat = (x[at] - mean) * inv_std;
      dx[at] = a * (dy[at] - mean_dy - xhat * mean_dy_xhat);
    }
    if (threadIdx.x == 0) {
      dbeta[c] = static_cast<float>(sum_dy);
      dgamma[c] = static_cast<float>(sum_dy_xhat);
    }
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_batchnorm_forward_training(BatchNormShape d, float eps, float decay, const float* x,
                                       const float* gamma, const float* beta, float* y,
                                       float* running_mean, float* running_var, float* save_mean,
                                       float* save_inv_std, const LaunchLimits& limits,
                                       cudaStream_t stream) {
  with_index_type(per_channel(d), [&](auto index) {
    batchnorm_training_kernel<decltype(index)>
        <<<limits.grid_for_items(d.channels), limits.reduction_block(), 0, stream>>>(
            d, eps, decay, x, gamma, beta, y, running_mean, running_var, save_mean, save_inv_std);
    DL_CUDA_LAUNCHED(batchnorm_training_kernel);
  });
}

void launch_batchnorm_forward_inference(BatchNormShape d, float eps, const float* x,
                                        const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var,
                                        float* y, const LaunchLimits& limits, cudaStream_t stream) {
  with_index_type(per_channel(d), [&](auto index) {
    batchnorm_inference_kernel<decltype(index)>
        <<<limits.grid_for_items(d.channels), limits.block(), 0, stream>>>(
            d, eps, x, gamma, beta, running_mean, running_var, y);
    DL_CUDA_LAUNCHED(batchnorm_inference_kernel);
  });
}

void launch_batchnorm_backward(BatchNormShape d, const float* x, const float* dy,
                               const float* gamma, const float* save_mean,
                               const float* save_inv_std, float* dx, float* dgamma, float* dbeta,
                               const LaunchLimits& limits, cudaStream_t stream) {
  with_index_type(per_channel(d), [&](auto index) {
    batchnorm_backward_kernel<decltype(index)>
        <<<limits.grid_for_items(d.channels), limits.reduction_block(), 0, stream>>>(
            d, x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta);
    DL_CUDA_LAUNCHED(batchnorm_backward_kernel);
  });
}

}  // namespace dl::gpu
