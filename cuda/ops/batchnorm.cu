// Batch normalization. A channel's m = n * spatial values are strided in NCHW: value j of channel
// c is sample j / spatial, position j % spatial. Its statistics are reduced in double (two
// passes for the variance, as on the CPU), then y = act(x * scale + shift) is applied with the
// per-channel scale and shift in float, act the fused activation (ops/batchnorm.hpp; the
// identity for batch normalization alone), whose gradient the backward kernels apply to dy at
// the recomputed x * scale + shift.
//  - spatial > 1: one block per channel (grid-stride over channels); a warp reads neighbouring
//    positions of a plane.
//  - spatial == 1 (after a dense layer: x is [n][channels]): one block per 32 channels, lane l of
//    every warp on channel 32 t + l, the warps on interleaved rows, so a warp reads 32 neighbouring
//    floats of a row. One block per channel would read one float per row there, a 32-way
//    uncoalesced access.
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

// The per-channel arithmetic both layouts share, the CPU's formulas.
struct Affine {
  float scale, shift;
};
__device__ Affine affine(double mean, double inv_std, float gamma, float beta) {
  return {static_cast<float>(gamma * inv_std), static_cast<float>(beta - mean * gamma * inv_std)};
}
__device__ void save_statistics(int c, double mean, double var, double inv_std, double unbias,
                                float decay, float* running_mean, float* running_var,
                                float* save_mean, float* save_inv_std) {
  save_mean[c] = static_cast<float>(mean);
  save_inv_std[c] = static_cast<float>(inv_std);
  running_mean[c] = static_cast<float>(decay * running_mean[c] + (1.0 - decay) * mean);
  running_var[c] = static_cast<float>(decay * running_var[c] + (1.0 - decay) * var * unbias);
}
__device__ double unbiased_factor(double count) {
  return count > 1.0 ? count / (count - 1.0) : 1.0;
}
// The fused activation's scale and shift, saved for the backward pass.
__device__ void save_affine_of(int c, int channels, Affine f, float* save_affine) {
  if (save_affine == nullptr) return;
  save_affine[c] = f.scale;
  save_affine[channels + c] = f.shift;
}
__device__ Affine saved_affine(int c, int channels, const float* save_affine) {
  return save_affine != nullptr ? Affine{save_affine[c], save_affine[channels + c]}
                                : Affine{1.0f, 0.0f};
}
template <Activation A>
__device__ float normalized_output(float x, Affine f) {
  return ops::activate<A>(ops::batchnorm_affine(x, f.scale, f.shift));
}
// dy taken through the fused activation's gradient: the gradient w.r.t. the normalized value.
template <Activation A>
__device__ float pre_activation_gradient(float x, float dy, Affine f) {
  if constexpr (A == Activation::kIdentity) return dy;
  return ops::batchnorm_activation_gradient<A>(x, f.scale, f.shift, dy);
}
// dx of one value, from g = pre_activation_gradient, the channel's a = gamma inv_std and the
// means of g and g xhat.
__device__ float input_gradient(float x, float g, float mean, float inv_std, float a, float mean_dy,
                                float mean_dy_xhat) {
  const float xhat = (x - mean) * inv_std;
  return a * (g - mean_dy - xhat * mean_dy_xhat);
}

// ---- kernels: one block per channel --------------------------------------------------------

template <typename Index, Activation A>
__global__ void batchnorm_training_kernel(BatchNormShape d, float eps, float decay, const float* x,
                                          const float* gamma, const float* beta, float* y,
                                          float* running_mean, float* running_var, float* save_mean,
                                          float* save_inv_std, float* save_affine) {
  __shared__ double sum_shared[kWarpLanes];
  const Index m = static_cast<Index>(per_channel(d));
  const double count = static_cast<double>(m);
  const double unbias = unbiased_factor(count);
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
    const Affine f = affine(mean, inv_std, gamma[c], beta[c]);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      y[at] = normalized_output<A>(x[at], f);
    }
    if (threadIdx.x == 0) {
      save_statistics(c, mean, var, inv_std, unbias, decay, running_mean, running_var, save_mean,
                      save_inv_std);
      save_affine_of(c, d.channels, f, save_affine);
    }
  }
}

template <typename Index, Activation A>
__global__ void batchnorm_inference_kernel(BatchNormShape d, float eps, const float* x,
                                           const float* gamma, const float* beta,
                                           const float* running_mean, const float* running_var,
                                           float* y) {
  const Index m = static_cast<Index>(per_channel(d));
  for (int c = blockIdx.x; c < d.channels; c += gridDim.x) {
    const double inv_std = 1.0 / sqrt(static_cast<double>(running_var[c]) + eps);
    const Affine f = affine(running_mean[c], inv_std, gamma[c], beta[c]);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      y[at] = normalized_output<A>(x[at], f);
    }
  }
}

template <typename Index, Activation A>
__global__ void batchnorm_backward_kernel(BatchNormShape d, const float* x, const float* dy,
                                          const float* gamma, const float* save_mean,
                                          const float* save_inv_std, const float* save_affine,
                                          float* dx, float* dgamma, float* dbeta) {
  __shared__ double sum_shared[kWarpLanes];
  const Index m = static_cast<Index>(per_channel(d));
  const double count = static_cast<double>(m);
  for (int c = blockIdx.x; c < d.channels; c += gridDim.x) {
    const float mean = save_mean[c];
    const float inv_std = save_inv_std[c];
    const Affine f = saved_affine(c, d.channels, save_affine);
    double sum_dy = 0.0;
    double sum_dy_xhat = 0.0;
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      const float g = pre_activation_gradient<A>(x[at], dy[at], f);
      sum_dy += g;
      sum_dy_xhat += static_cast<double>(g) * ((x[at] - mean) * inv_std);
    }
    sum_dy = block_sum(sum_dy, sum_shared);
    sum_dy_xhat = block_sum(sum_dy_xhat, sum_shared);
    const float a = gamma[c] * inv_std;
    const float mean_dy = static_cast<float>(sum_dy / count);
    const float mean_dy_xhat = static_cast<float>(sum_dy_xhat / count);
    for (Index j = threadIdx.x; j < m; j += blockDim.x) {
      const std::size_t at = channel_offset(d, c, j);
      dx[at] = input_gradient(x[at], pre_activation_gradient<A>(x[at], dy[at], f), mean, inv_std, a,
                              mean_dy, mean_dy_xhat);
    }
    if (threadIdx.x == 0) {
      dbeta[c] = static_cast<float>(sum_dy);
      dgamma[c] = static_cast<float>(sum_dy_xhat);
    }
  }
}

// ---- kernels: spatial == 1, 32 channels per block ------------------------------------------
// Thread t: lane t % 32 on channel 32 tile + lane, rows t / 32, t / 32 + warps, ... (blockDim.x
// whole warps). A column's partial sums meet in shared memory and are added in warp order.

inline constexpr int kMaxWarps = kMaxThreadsPerBlock / kWarpLanes;

struct RowTile {
  int lane, warp, warps, c;
  bool valid;  // c < channels; every thread still takes part in the barriers
};
__device__ RowTile row_tile(int tile, int channels) {
  RowTile t;
  t.lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  t.warp = static_cast<int>(threadIdx.x) / kWarpLanes;
  t.warps = static_cast<int>(blockDim.x) / kWarpLanes;
  t.c = tile * kWarpLanes + t.lane;
  t.valid = t.c < channels;
  return t;
}

// Two sums at once (the backward pass needs dy and dy xhat).
// Trivial, as __shared__ arrays need.
struct SumPair {
  double first, second;
};

// value(row) summed over the n rows of the thread's column, returned to all its threads.
template <typename Value>
__device__ SumPair column_sums(const RowTile& t, int n, SumPair (*shared)[kWarpLanes],
                               Value value) {
  SumPair own{0.0, 0.0};
  if (t.valid) {
    for (int r = t.warp; r < n; r += t.warps) {
      const SumPair v = value(r);
      own.first += v.first;
      own.second += v.second;
    }
  }
  __syncthreads();  // the previous call's readers are done with `shared`
  shared[t.warp][t.lane] = own;
  __syncthreads();
  SumPair total{0.0, 0.0};
  for (int w = 0; w < t.warps; ++w) {
    total.first += shared[w][t.lane].first;
    total.second += shared[w][t.lane].second;
  }
  return total;
}

template <Activation A>
__global__ void batchnorm_rows_training_kernel(BatchNormShape d, float eps, float decay,
                                               const float* x, const float* gamma,
                                               const float* beta, float* y, float* running_mean,
                                               float* running_var, float* save_mean,
                                               float* save_inv_std, float* save_affine) {
  __shared__ SumPair shared[kMaxWarps][kWarpLanes];
  const double count = static_cast<double>(d.n);
  const std::size_t row = static_cast<std::size_t>(d.channels);
  const int tiles = (d.channels + kWarpLanes - 1) / kWarpLanes;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const RowTile t = row_tile(tile, d.channels);
    const double mean = column_sums(t, d.n, shared,
                                    [&](int r) {
                                      return SumPair{x[r * row + t.c], 0.0};
                                    })
                            .first /
                        count;
    const double var = column_sums(t, d.n, shared,
                                   [&](int r) {
                                     const double diff = x[r * row + t.c] - mean;
                                     return SumPair{diff * diff, 0.0};
                                   })
                           .first /
                       count;
    if (!t.valid) continue;
    const double inv_std = 1.0 / sqrt(var + eps);
    const Affine f = affine(mean, inv_std, gamma[t.c], beta[t.c]);
    for (int r = t.warp; r < d.n; r += t.warps)
      y[r * row + t.c] = normalized_output<A>(x[r * row + t.c], f);
    if (t.warp == 0) {
      save_statistics(t.c, mean, var, inv_std, unbiased_factor(count), decay, running_mean,
                      running_var, save_mean, save_inv_std);
      save_affine_of(t.c, d.channels, f, save_affine);
    }
  }
}

template <Activation A>
__global__ void batchnorm_rows_inference_kernel(BatchNormShape d, float eps, const float* x,
                                                const float* gamma, const float* beta,
                                                const float* running_mean, const float* running_var,
                                                float* y) {
  const std::size_t row = static_cast<std::size_t>(d.channels);
  const int tiles = (d.channels + kWarpLanes - 1) / kWarpLanes;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const RowTile t = row_tile(tile, d.channels);
    if (!t.valid) continue;
    const double inv_std = 1.0 / sqrt(static_cast<double>(running_var[t.c]) + eps);
    const Affine f = affine(running_mean[t.c], inv_std, gamma[t.c], beta[t.c]);
    for (int r = t.warp; r < d.n; r += t.warps)
      y[r * row + t.c] = normalized_output<A>(x[r * row + t.c], f);
  }
}

template <Activation A>
__global__ void batchnorm_rows_backward_kernel(BatchNormShape d, const float* x, const float* dy,
                                               const float* gamma, const float* save_mean,
                                               const float* save_inv_std, const float* save_affine,
                                               float* dx, float* dgamma, float* dbeta) {
  __shared__ SumPair shared[kMaxWarps][kWarpLanes];
  const double count = static_cast<double>(d.n);
  const std::size_t row = static_cast<std::size_t>(d.channels);
  const int tiles = (d.channels + kWarpLanes - 1) / kWarpLanes;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const RowTile t = row_tile(tile, d.channels);
    const float mean = t.valid ? save_mean[t.c] : 0.0f;
    const float inv_std = t.valid ? save_inv_std[t.c] : 0.0f;
    const Affine f = t.valid ? saved_affine(t.c, d.channels, save_affine) : Affine{1.0f, 0.0f};
    const SumPair sums = column_sums(t, d.n, shared, [&](int r) {
      const std::size_t at = r * row + t.c;
      const float g = pre_activation_gradient<A>(x[at], dy[at], f);
      return SumPair{g, static_cast<double>(g) * ((x[at] - mean) * inv_std)};
    });
    if (!t.valid) continue;
    const float a = gamma[t.c] * inv_std;
    const float mean_dy = static_cast<float>(sums.first / count);
    const float mean_dy_xhat = static_cast<float>(sums.second / count);
    for (int r = t.warp; r < d.n; r += t.warps) {
      const std::size_t at = r * row + t.c;
      dx[at] = input_gradient(x[at], pre_activation_gradient<A>(x[at], dy[at], f), mean, inv_std, a,
                              mean_dy, mean_dy_xhat);
    }
    if (t.warp == 0) {
      dbeta[t.c] = static_cast<float>(sums.first);
      dgamma[t.c] = static_cast<float>(sums.second);
    }
  }
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

namespace {

// Blocks of the spatial == 1 kernels: one per 32 channels.
std::size_t row_tiles(const BatchNormShape& d) {
  return (static_cast<std::size_t>(d.channels) + kWarpLanes - 1) / kWarpLanes;
}

}  // namespace

void launch_batchnorm_forward_training(BatchNormShape d, Activation a, float eps, float decay,
                                       const float* x, const float* gamma, const float* beta,
                                       float* y, float* running_mean, float* running_var,
                                       float* save_mean, float* save_inv_std, float* save_affine,
                                       const LaunchLimits& limits, cudaStream_t stream) {
  ops::check_activation(a, save_affine);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    if (d.spatial == 1) {
      batchnorm_rows_training_kernel<kA>
          <<<limits.grid_for_items(row_tiles(d)), limits.reduction_block(), 0, stream>>>(
              d, eps, decay, x, gamma, beta, y, running_mean, running_var, save_mean, save_inv_std,
              save_affine);
      DL_CUDA_LAUNCHED(batchnorm_rows_training_kernel);
      return;
    }
    with_index_type(per_channel(d), [&](auto index) {
      batchnorm_training_kernel<decltype(index), kA>
          <<<limits.grid_for_items(d.channels), limits.reduction_block(), 0, stream>>>(
              d, eps, decay, x, gamma, beta, y, running_mean, running_var, save_mean, save_inv_std,
              save_affine);
      DL_CUDA_LAUNCHED(batchnorm_training_kernel);
    });
  });
}

void launch_batchnorm_forward_inference(BatchNormShape d, Activation a, float eps, const float* x,
                                        const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var,
                                        float* y, const LaunchLimits& limits, cudaStream_t stream) {
  ops::check_fusable(a);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    if (d.spatial == 1) {
      batchnorm_rows_inference_kernel<kA>
          <<<limits.grid_for_items(row_tiles(d)), limits.reduction_block(), 0, stream>>>(
              d, eps, x, gamma, beta, running_mean, running_var, y);
      DL_CUDA_LAUNCHED(batchnorm_rows_inference_kernel);
      return;
    }
    with_index_type(per_channel(d), [&](auto index) {
      batchnorm_inference_kernel<decltype(index), kA>
          <<<limits.grid_for_items(d.channels), limits.block(), 0, stream>>>(
              d, eps, x, gamma, beta, running_mean, running_var, y);
      DL_CUDA_LAUNCHED(batchnorm_inference_kernel);
    });
  });
}

void launch_batchnorm_backward(BatchNormShape d, Activation a, const float* x, const float* dy,
                               const float* gamma, const float* save_mean,
                               const float* save_inv_std, const float* save_affine, float* dx,
                               float* dgamma, float* dbeta, const LaunchLimits& limits,
                               cudaStream_t stream) {
  ops::check_activation(a, save_affine);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    if (d.spatial == 1) {
      batchnorm_rows_backward_kernel<kA>
          <<<limits.grid_for_items(row_tiles(d)), limits.reduction_block(), 0, stream>>>(
              d, x, dy, gamma, save_mean, save_inv_std, save_affine, dx, dgamma, dbeta);
      DL_CUDA_LAUNCHED(batchnorm_rows_backward_kernel);
      return;
    }
    with_index_type(per_channel(d), [&](auto index) {
      batchnorm_backward_kernel<decltype(index), kA>
          <<<limits.grid_for_items(d.channels), limits.reduction_block(), 0, stream>>>(
              d, x, dy, gamma, save_mean, save_inv_std, save_affine, dx, dgamma, dbeta);
      DL_CUDA_LAUNCHED(batchnorm_backward_kernel);
    });
  });
}

}  // namespace dl::gpu
