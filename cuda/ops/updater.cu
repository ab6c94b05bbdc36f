// The updaters: each reads a parameter, its gradient and its state once and writes them back
// once, in one pass over the flat buffers, with L2 and AdamW's decay (UpdateTerms) in the same
// pass. The arithmetic is the CPU backend's expression by
// expression, with IEEE sqrt and division (nvcc's default); results agree with the CPU to
// rounding, not bit for bit, since either compiler may fuse a multiply and an add.
#include "cuda_check.hpp"
#include "ops/kernel_support.cuh"
#include "ops/updater.hpp"

namespace dl::gpu {

namespace {

// Term ranges one launch carries by value (kernel parameter space, a constant bank every thread
// reads at the same address); a buffer with more ranges takes one launch per this many.
constexpr int kTermsPerLaunch = 16;

struct TermTable {
  int count = 0;
  std::size_t begin[kTermsPerLaunch] = {};
  std::size_t end[kTermsPerLaunch] = {};
  float l2[kTermsPerLaunch] = {};
  float decay_keep[kTermsPerLaunch] = {};
};

// The parameter and gradient the rule sees at i: UpdateTerms' g + l2 * w and w * decay_keep,
// each only where the range has it.
__device__ inline void with_terms(const TermTable& t, std::size_t i, float& w, float& g) {
  for (int r = 0; r < t.count; ++r) {
    if (i < t.begin[r] || i >= t.end[r]) continue;
    if (t.l2[r] != 0.0f) g = g + t.l2[r] * w;
    if (t.decay_keep[r] != 1.0f) w = w * t.decay_keep[r];
    return;
  }
}

// ---- kernels: each over [begin, end) of the flat buffers --------------------------------------

__global__ void sgd_kernel(std::size_t begin, std::size_t end, TermTable t, float lr, float* p,
                           const float* g) {
  for (std::size_t i = begin + first_index(); i < end; i += grid_stride()) {
    float w = p[i], grad = g[i];
    with_terms(t, i, w, grad);
    p[i] = w - lr * grad;
  }
}

__global__ void nesterovs_kernel(std::size_t begin, std::size_t end, TermTable t, float lr,
                                 float momentum, float* p, const float* g, float* v) {
  const float minus_one_minus_momentum = -momentum - 1.0f;
  for (std::size_t i = begin + first_index(); i < end; i += grid_stride()) {
    float w = p[i], grad = g[i];
    with_terms(t, i, w, grad);
    const float momentum_v_prev = momentum * v[i];
    const float v_new = momentum_v_prev - lr * grad;
    v[i] = v_new;
    p[i] = w - (momentum_v_prev + minus_one_minus_momentum * v_new);
  }
}

__global__ void adam_kernel(std::size_t begin, std::size_t end, TermTable t, float alpha_t,
                            float beta1, float beta2, float eps, float* p, const float* g, float* m,
                            float* v) {
  const float one_minus_beta1 = 1.0f - beta1;
  const float one_minus_beta2 = 1.0f - beta2;
  for (std::size_t i = begin + first_index(); i < end; i += grid_stride()) {
    float w = p[i], grad = g[i];
    with_terms(t, i, w, grad);
    const float m_new = beta1 * m[i] + one_minus_beta1 * grad;
    const float v_new = beta2 * v[i] + one_minus_beta2 * grad * grad;
    m[i] = m_new;
    v[i] = v_new;
    p[i] = w - alpha_t * m_new / (sqrtf(v_new) + eps);
  }
}

__global__ void rmsprop_kernel(std::size_t begin, std::size_t end, TermTable t, float lr,
                               float decay, float eps, float* p, const float* g, float* s) {
  const float one_minus_decay = 1.0f - decay;
  for (std::size_t i = begin + first_index(); i < end; i += grid_stride()) {
    float w = p[i], grad = g[i];
    with_terms(t, i, w, grad);
    const float s_new = decay * s[i] + one_minus_decay * grad * grad;
    s[i] = s_new;
    p[i] = w - lr * grad / (sqrtf(s_new) + eps);
  }
}

// One launch of h's kernel over [begin, end) with the term table t.
void launch_window(const UpdaterHyper& h, std::size_t n, std::size_t begin, std::size_t end,
                   const TermTable& t, float* params, const float* grads, float* state,
                   const LaunchLimits& limits, cudaStream_t stream) {
  const int block = limits.block();
  const int grid = limits.grid(end - begin, block);
  switch (h.type) {
    case UpdaterType::kSgd:
      sgd_kernel<<<grid, block, 0, stream>>>(begin, end, t, h.learning_rate, params, grads);
      DL_CUDA_LAUNCHED(sgd_kernel);
      return;
    case UpdaterType::kNesterovs:
      nesterovs_kernel<<<grid, block, 0, stream>>>(begin, end, t, h.learning_rate, h.momentum,
                                                   params, grads, state);
      DL_CUDA_LAUNCHED(nesterovs_kernel);
      return;
    case UpdaterType::kAdam:
    case UpdaterType::kAdamW:
      adam_kernel<<<grid, block, 0, stream>>>(begin, end, t,
                                              static_cast<float>(ops::adam_step_size(h)), h.beta1,
                                              h.beta2, h.epsilon, params, grads, state, state + n);
      DL_CUDA_LAUNCHED(adam_kernel);
      return;
    case UpdaterType::kRmsProp:
      rmsprop_kernel<<<grid, block, 0, stream>>>(begin, end, t, h.learning_rate, h.rms_decay,
                                                 h.epsilon, params, grads, state);
      DL_CUDA_LAUNCHED(rmsprop_kernel);
      return;
  }
}

}  // namespace

// ---- launcher ---------------------------------------------------------------------------------

// The buffer in windows of kTermsPerLaunch term ranges each: a window runs from its first range's
// begin (0 for the first) to the next window's, so every parameter is updated exactly once.
void launch_updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                         float* state, const UpdateTermRanges& terms, const LaunchLimits& limits,
                         cudaStream_t stream) {
  ops::check_update_terms(terms, n);
  if (n == 0) return;
  std::size_t window_begin = 0;
  std::size_t next = 0;
  do {
    TermTable table;
    for (; next < terms.size() && table.count < kTermsPerLaunch; ++next, ++table.count) {
      table.begin[table.count] = terms[next].begin;
      table.end[table.count] = terms[next].end;
      table.l2[table.count] = terms[next].l2;
      table.decay_keep[table.count] = terms[next].decay_keep;
    }
    const std::size_t window_end = next < terms.size() ? terms[next].begin : n;
    if (window_end > window_begin) {
      launch_window(h, n, window_begin, window_end, table, params, grads, state, limits, stream);
    }
    window_begin = window_end;
  } while (next < terms.size());
}

}  // namespace dl::gpu
