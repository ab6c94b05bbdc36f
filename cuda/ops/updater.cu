// The updaters: each reads a parameter, its gradient and its state once and writes them back
// once, in one pass over the flat buffers. The arithmetic is the CPU backend's expression by
// expression, with IEEE sqrt and division (nvcc's default); results agree with the CPU to
// rounding, not bit for bit, since either compiler may fuse a multiply and an add.
#include "cuda_check.hpp"
#include "ops/kernel_support.cuh"
#include "ops/updater.hpp"

namespace dl::gpu {

namespace {

// ---- kernels ----------------------------------------------------------------------------------

__global__ void sgd_kernel(std::size_t n, float lr, float* p, const float* g) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) p[i] -= lr * g[i];
}

__global__ void nesterovs_kernel(std::size_t n, float lr, float momentum, float* p, const float* g,
                                 float* v) {
  const float minus_one_minus_momentum = -momentum - 1.0f;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float momentum_v_prev = momentum * v[i];
    const float v_new = momentum_v_prev - lr * g[i];
    v[i] = v_new;
    p[i] -= momentum_v_prev + minus_one_minus_momentum * v_new;
  }
}

__global__ void adam_kernel(std::size_t n, float alpha_t, float beta1, float beta2, float eps,
                            float* p, const float* g, float* m, float* v) {
  const float one_minus_beta1 = 1.0f - beta1;
  const float one_minus_beta2 = 1.0f - beta2;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float m_new = beta1 * m[i] + one_minus_beta1 * g[i];
    const float v_new = beta2 * v[i] + one_minus_beta2 * g[i] * g[i];
    m[i] = m_new;
    v[i] = v_new;
    p[i] -= alpha_t * m_new / (sqrtf(v_new) + eps);
  }
}

__global__ void rmsprop_kernel(std::size_t n, float lr, float decay, float eps, float* p,
                               const float* g, float* s) {
  const float one_minus_decay = 1.0f - decay;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float s_new = decay * s[i] + one_minus_decay * g[i] * g[i];
    s[i] = s_new;
    p[i] -= lr * g[i] / (sqrtf(s_new) + eps);
  }
}

}  // namespace

// ---- launcher ---------------------------------------------------------------------------------

void launch_updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                         float* state, const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0) return;
  const int block = limits.block();
  const int grid = limits.grid(n, block);
  switch (h.type) {
    case UpdaterType::kSgd:
      sgd_kernel<<<grid, block, 0, stream>>>(n, h.learning_rate, params, grads);
      DL_CUDA_LAUNCHED(sgd_kernel);
      return;
    case UpdaterType::kNesterovs:
      nesterovs_kernel<<<grid, block, 0, stream>>>(n, h.learning_rate, h.momentum, params, grads,
                                                   state);
      DL_CUDA_LAUNCHED(nesterovs_kernel);
      return;
    case UpdaterType::kAdam:
    case UpdaterType::kAdamW:
      adam_kernel<<<grid, block, 0, stream>>>(n, static_cast<float>(ops::adam_step_size(h)),
                                              h.beta1, h.beta2, h.epsilon, params, grads, state,
                                              state + n);
      DL_CUDA_LAUNCHED(adam_kernel);
      return;
    case UpdaterType::kRmsProp:
      rmsprop_kernel<<<grid, block, 0, stream>>>(n, h.learning_rate, h.rms_decay, h.epsilon, params,
                                                 grads, state);
      DL_CUDA_LAUNCHED(rmsprop_kernel);
      return;
  }
}

}  // namespace dl::gpu
