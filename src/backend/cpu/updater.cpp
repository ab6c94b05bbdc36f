#include "backend/cpu/updater.hpp"

#include <cmath>
#include <string>

#include "backend/cpu/thread_pool.hpp"
#include "core/error.hpp"

namespace dl::cpu {

namespace {

void sgd_step(std::size_t n, float lr, float* p, const float* g) {
  for (std::size_t i = 0; i < n; ++i) p[i] -= lr * g[i];
}

void nesterovs_step(std::size_t n, float lr, float momentum, float* p, const float* g, float* v) {
  const float minus_one_minus_momentum = -momentum - 1.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float momentum_v_prev = momentum * v[i];
    const float v_new = momentum_v_prev - lr * g[i];
    v[i] = v_new;
    p[i] -= momentum_v_prev + minus_one_minus_momentum * v_new;
  }
}

void adam_step(std::size_t n, float alpha_t, float beta1, float beta2, float eps, float* p,
               const float* g, float* m, float* v) {
  const float one_minus_beta1 = 1.0f - beta1;
  const float one_minus_beta2 = 1.0f - beta2;
  for (std::size_t i = 0; i < n; ++i) {
    const float m_new = beta1 * m[i] + one_minus_beta1 * g[i];
    const float v_new = beta2 * v[i] + one_minus_beta2 * g[i] * g[i];
    m[i] = m_new;
    v[i] = v_new;
    p[i] -= alpha_t * m_new / (std::sqrt(v_new) + eps);
  }
}

void rmsprop_step(std::size_t n, float lr, float decay, float eps, float* p, const float* g,
                  float* s) {
  const float one_minus_decay = 1.0f - decay;
  for (std::size_t i = 0; i < n; ++i) {
    const float s_new = decay * s[i] + one_minus_decay * g[i] * g[i];
    s[i] = s_new;
    p[i] -= lr * g[i] / (std::sqrt(s_new) + eps);
  }
}

}  // namespace

// Every rule updates each parameter from its own gradient and state alone, so the pass is split
// over threads (parallel_ranges) without changing any bit.
void updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                  float* state) {
  const float adam_alpha = uses_adam_rule(h.type) ? static_cast<float>(adam_step_size(h)) : 0.0f;
  parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    const std::size_t count = end - begin;
    float* p = params + begin;
    const float* g = grads + begin;
    switch (h.type) {
      case UpdaterType::kSgd:
        sgd_step(count, h.learning_rate, p, g);
        return;
      case UpdaterType::kNesterovs:
        nesterovs_step(count, h.learning_rate, h.momentum, p, g, state + begin);
        return;
      case UpdaterType::kAdam:
      case UpdaterType::kAdamW:
        adam_step(count, adam_alpha, h.beta1, h.beta2, h.epsilon, p, g, state + begin,
                  state + n + begin);
        return;
      case UpdaterType::kRmsProp:
        rmsprop_step(count, h.learning_rate, h.rms_decay, h.epsilon, p, g, state + begin);
        return;
    }
  });
}

}  // namespace dl::cpu
