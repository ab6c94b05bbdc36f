// Activations. The elementwise ones are one grid-stride kernel each, instantiated per activation
// so the loop body has no switch; their math is the op contract's (backend/ops/activation.hpp).
// Softmax takes one block per row: the row maximum and the sum of exponentials are block
// reductions, and the sum is kept in double as on the CPU.
#include <cmath>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "cuda_check.hpp"
#include "ops/activation.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

// The math is the op contract's (backend/ops/activation.hpp), one template per activation.
template <Activation A>
__global__ void activation_forward_kernel(std::size_t n, const float* x, float* y) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) y[i] = ops::activate<A>(x[i]);
}

// x is read only where the activation's gradient needs it (it may be null otherwise).
template <Activation A>
__global__ void activation_backward_kernel(std::size_t n, const float* x, const float* y,
                                           const float* dy, float* dx) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float input = ops::activation_reads_input(A) ? x[i] : 0.0f;
    dx[i] = ops::activation_gradient<A>(input, y[i], dy[i]);
  }
}

// y = act(y + x): the residual sum's last term and its activation.
template <Activation A>
__global__ void add_activation_forward_kernel(std::size_t n, const float* x, float* y) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    y[i] = ops::activate<A>(y[i] + x[i]);
}

// dy = act's gradient of dy + term: the residual sum's activation gradient and a gradient term.
template <Activation A>
__global__ void add_activation_backward_kernel(std::size_t n, const float* x, const float* y,
                                               const float* term, float* dy) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float input = ops::activation_reads_input(A) ? x[i] : 0.0f;
    dy[i] = ops::activation_gradient<A>(input, y[i], dy[i] + term[i]);
  }
}

// One block per row (grid-stride over rows). In place is safe: every read of the row happens
// before the reductions' barriers, and each thread then rewrites only the elements it reads.
__global__ void softmax_forward_kernel(std::size_t rows, std::size_t cols, const float* x,
                                       float* y) {
  __shared__ float max_shared[kWarpLanes];
  __shared__ double sum_shared[kWarpLanes];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float row_max = -INFINITY;
    for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x) row_max = fmaxf(row_max, xr[j]);
    row_max = block_max(row_max, max_shared);
    double sum = 0.0;
    for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - row_max);
    sum = block_sum(sum, sum_shared);
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x)
      yr[j] = expf(xr[j] - row_max) * inv_sum;
  }
}

// dx = y * (dy - <dy, y>) per row; dx == dy is safe for the same reason as above.
__global__ void softmax_backward_kernel(std::size_t rows, std::size_t cols, const float* y,
                                        const float* dy, float* dx) {
  __shared__ double dot_shared[kWarpLanes];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * cols;
    const float* dyr = dy + r * cols;
    float* dxr = dx + r * cols;
    double dot = 0.0;
    for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x)
      dot += static_cast<double>(dyr[j]) * yr[j];
    const float dot_f = static_cast<float>(block_sum(dot, dot_shared));
    for (std::size_t j = threadIdx.x; j < cols; j += blockDim.x) dxr[j] = yr[j] * (dyr[j] - dot_f);
  }
}

template <Activation A>
void elementwise_forward(std::size_t n, const float* x, float* y, const LaunchLimits& limits,
                         cudaStream_t stream) {
  const int block = limits.block();
  activation_forward_kernel<A><<<limits.grid(n, block), block, 0, stream>>>(n, x, y);
  DL_CUDA_LAUNCHED(activation_forward_kernel);
}

template <Activation A>
void elementwise_backward(std::size_t n, const float* x, const float* y, const float* dy, float* dx,
                          const LaunchLimits& limits, cudaStream_t stream) {
  const int block = limits.block();
  activation_backward_kernel<A><<<limits.grid(n, block), block, 0, stream>>>(n, x, y, dy, dx);
  DL_CUDA_LAUNCHED(activation_backward_kernel);
}

}  // namespace

// ---- launchers --------------------------------------------------------------------------------

void launch_activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                               float* y, const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t n = rows * cols;
  if (n == 0) return;
  const bool elementwise = ops::visit_elementwise_activation(
      a, [&](auto tag) { elementwise_forward<decltype(tag)::value>(n, x, y, limits, stream); });
  if (elementwise) return;
  if (a == Activation::kSoftmax) {
    softmax_forward_kernel<<<limits.grid_for_items(rows), row_block(limits, cols), 0, stream>>>(
        rows, cols, x, y);
    DL_CUDA_LAUNCHED(softmax_forward_kernel);
    return;
  }
  if (x != y)  // the identity
    DL_CUDA_CALL(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void launch_activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                                const float* y, const float* dy, float* dx,
                                const LaunchLimits& limits, cudaStream_t stream) {
  const std::size_t n = rows * cols;
  if (n == 0) return;
  ops::check_gradient_input(a, x);
  const bool elementwise = ops::visit_elementwise_activation(a, [&](auto tag) {
    elementwise_backward<decltype(tag)::value>(n, x, y, dy, dx, limits, stream);
  });
  if (elementwise) return;
  if (a == Activation::kSoftmax) {
    softmax_backward_kernel<<<limits.grid_for_items(rows), row_block(limits, cols), 0, stream>>>(
        rows, cols, y, dy, dx);
    DL_CUDA_LAUNCHED(softmax_backward_kernel);
    return;
  }
  if (dy != dx)  // the identity
    DL_CUDA_CALL(cudaMemcpyAsync(dx, dy, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

void launch_add_activation_forward(Activation a, std::size_t n, const float* x, float* y,
                                   const LaunchLimits& limits, cudaStream_t stream) {
  ops::check_residual_activation(a);
  if (n == 0) return;
  ops::visit_activation_or_identity(a, [&](auto tag) {
    const int block = limits.block();
    add_activation_forward_kernel<decltype(tag)::value>
        <<<limits.grid(n, block), block, 0, stream>>>(n, x, y);
    DL_CUDA_LAUNCHED(add_activation_forward_kernel);
  });
}

void launch_add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                                    const float* term, float* dy, const LaunchLimits& limits,
                                    cudaStream_t stream) {
  ops::check_residual_activation(a);
  ops::check_gradient_input(a, x);
  if (n == 0) return;
  ops::visit_activation_or_identity(a, [&](auto tag) {
    const int block = limits.block();
    add_activation_backward_kernel<decltype(tag)::value>
        <<<limits.grid(n, block), block, 0, stream>>>(n, x, y, term, dy);
    DL_CUDA_LAUNCHED(add_activation_backward_kernel);
  });
}

}  // namespace dl::gpu
