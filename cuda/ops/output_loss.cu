// Output activation + loss. Softmax with cross-entropy (NLL == MCXENT) is one kernel: one block
// per row computes the log-sum-exp, writes the probabilities and dz = grad_scale * (a - y) (y
// label-smoothed where asked: backend/ops/output_loss.hpp), and
// adds the row's loss to its block's partial sum. Other combinations run the activation, a
// per-row loss kernel writing dL/da, and the activation's backward. Every path ends with the
// deterministic sum of the per-block partials into loss_sum[0], which never leaves the device.
#include <cmath>

#include "backend/ops/output_loss.hpp"
#include "cuda_check.hpp"
#include "ops/activation.hpp"
#include "ops/kernel_support.cuh"
#include "ops/output_loss.hpp"
#include "ops/vector_ops.hpp"

namespace dl::gpu {

namespace {

// Probabilities below this count as this inside log() for non-softmax activations (the CPU
// backend's kMinLogProbability).
constexpr float kMinLogProbability = 1e-10f;

__device__ bool valid_label(std::int32_t label, int k) {
  return label >= 0 && label < k;
}

// ---- kernels ----------------------------------------------------------------------------------

// One block per row (grid-stride over rows); thread 0 keeps the block's running loss in row
// order. `out` may alias z: z_label is read before the first barrier, and each thread rewrites
// only the elements it reads.
__global__ void softmax_cross_entropy_kernel(int n, int k, const float* z,
                                             const std::int32_t* labels, float* out, float* dz,
                                             float grad_scale, float smoothing, double* partials) {
  __shared__ float max_shared[kWarpLanes];
  __shared__ double sum_shared[kWarpLanes];
  __shared__ double z_sum_shared[kWarpLanes];
  double block_loss = 0.0;
  for (int r = blockIdx.x; r < n; r += gridDim.x) {
    const float* zr = z + static_cast<std::size_t>(r) * k;
    float* outr = out + static_cast<std::size_t>(r) * k;
    float* dzr = dz + static_cast<std::size_t>(r) * k;
    const std::int32_t label = labels[r];
    const bool valid = valid_label(label, k);
    const float z_label = valid ? zr[label] : 0.0f;
    float row_max = -INFINITY;
    for (int j = threadIdx.x; j < k; j += blockDim.x) row_max = fmaxf(row_max, zr[j]);
    row_max = block_max(row_max, max_shared);
    double sum = 0.0, z_sum = 0.0;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      sum += exp(static_cast<double>(zr[j] - row_max));
      z_sum += zr[j];
    }
    sum = block_sum(sum, sum_shared);
    // Only label smoothing reads the logits' sum: the unsmoothed kernel keeps its barriers.
    if (smoothing != 0.0f) z_sum = block_sum(z_sum, z_sum_shared);
    const double inv_sum = 1.0 / sum;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      const float a = static_cast<float>(exp(static_cast<double>(zr[j] - row_max)) * inv_sum);
      outr[j] = a;
      dzr[j] = ops::softmax_cross_entropy_gradient(a, j == label, grad_scale, smoothing, k);
    }
    if (threadIdx.x == 0) {
      const double log_sum_exp = static_cast<double>(row_max) + log(sum);
      block_loss +=
          valid ? ops::smoothed_cross_entropy(log_sum_exp, z_label, z_sum, smoothing, k) : nan("");
    }
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_loss;
}

// Cross-entropy on probabilities `a` from a non-softmax activation: dz = dL/da (scaled).
__global__ void cross_entropy_kernel(int n, int k, const float* a, const std::int32_t* labels,
                                     float* dz, float grad_scale, double* partials) {
  double block_loss = 0.0;
  for (int r = blockIdx.x; r < n; r += gridDim.x) {
    const std::int32_t label = labels[r];
    const bool valid = valid_label(label, k);
    const float p =
        valid ? fmaxf(a[static_cast<std::size_t>(r) * k + label], kMinLogProbability) : 1.0f;
    float* dzr = dz + static_cast<std::size_t>(r) * k;
    for (int j = threadIdx.x; j < k; j += blockDim.x) dzr[j] = j == label ? -grad_scale / p : 0.0f;
    if (threadIdx.x == 0) block_loss += valid ? -log(static_cast<double>(p)) : nan("");
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_loss;
}

// Mean squared error against the one-hot label: dz = dL/da (scaled).
__global__ void mse_kernel(int n, int k, const float* a, const std::int32_t* labels, float* dz,
                           float grad_scale, double* partials) {
  __shared__ double sum_shared[kWarpLanes];
  const float grad_factor = grad_scale * 2.0f / static_cast<float>(k);
  double block_loss = 0.0;
  for (int r = blockIdx.x; r < n; r += gridDim.x) {
    const std::int32_t label = labels[r];
    const float* ar = a + static_cast<std::size_t>(r) * k;
    float* dzr = dz + static_cast<std::size_t>(r) * k;
    double squared = 0.0;
    for (int j = threadIdx.x; j < k; j += blockDim.x) {
      const float diff = ar[j] - (j == label ? 1.0f : 0.0f);
      squared += static_cast<double>(diff) * diff;
      dzr[j] = grad_factor * diff;
    }
    squared = block_sum(squared, sum_shared);
    if (threadIdx.x == 0)
      block_loss += valid_label(label, k) ? squared / static_cast<double>(k) : nan("");
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_loss;
}

// One block: each thread takes rows threadIdx.x, +blockDim.x, ...; the block's sum of small whole
// numbers is exact in float, so the count does not depend on the block size.
__global__ void count_correct_kernel(int n, int k, const float* out, const std::int32_t* labels,
                                     float* count) {
  __shared__ float sum_shared[kWarpLanes];
  float correct = 0.0f;
  for (int r = threadIdx.x; r < n; r += blockDim.x) {
    const float* row = out + static_cast<std::size_t>(r) * k;
    int best = 0;
    for (int j = 1; j < k; ++j)
      if (row[j] > row[best]) best = j;
    if (best == labels[r]) correct += 1.0f;
  }
  correct = block_sum(correct, sum_shared);
  if (threadIdx.x == 0) count[0] = correct;
}

}  // namespace

// ---- launcher ---------------------------------------------------------------------------------

void launch_output_loss(const OutputLoss& op, int n, int k, const float* z,
                        const std::int32_t* labels, float* out, float* dz, float grad_scale,
                        float* loss_sum, double* partials, const LaunchLimits& limits,
                        cudaStream_t stream) {
  const std::size_t rows = static_cast<std::size_t>(n > 0 ? n : 0);
  const std::size_t cols = static_cast<std::size_t>(k);
  const int grid = limits.grid_for_items(rows);
  const int block = row_block(limits, cols);
  ops::check_output_loss(op);
  const Activation act = op.activation;
  const bool cross_entropy = op.function != LossFunction::kMse;
  if (ops::is_softmax_cross_entropy(op)) {
    softmax_cross_entropy_kernel<<<grid, block, 0, stream>>>(n, k, z, labels, out, dz, grad_scale,
                                                             op.label_smoothing, partials);
    DL_CUDA_LAUNCHED(softmax_cross_entropy_kernel);
  } else {
    launch_activation_forward(act, rows, cols, z, out, limits, stream);
    if (cross_entropy) {
      cross_entropy_kernel<<<grid, block, 0, stream>>>(n, k, out, labels, dz, grad_scale, partials);
      DL_CUDA_LAUNCHED(cross_entropy_kernel);
    } else {
      mse_kernel<<<grid, block, 0, stream>>>(n, k, out, labels, dz, grad_scale, partials);
      DL_CUDA_LAUNCHED(mse_kernel);
    }
    launch_activation_backward(act, rows, cols, z, out, dz, dz, limits, stream);
  }
  launch_sum_partials(partials, grid, loss_sum, limits, stream);
}

void launch_count_correct(int n, int k, const float* out, const std::int32_t* labels, float* count,
                          const LaunchLimits& limits, cudaStream_t stream) {
  count_correct_kernel<<<1, limits.reduction_block(), 0, stream>>>(n, k, out, labels, count);
  DL_CUDA_LAUNCHED(count_correct_kernel);
}

}  // namespace dl::gpu
