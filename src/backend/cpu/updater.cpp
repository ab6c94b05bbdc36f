#include "backend/cpu/updater.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/thread_pool.hpp"
#include "core/error.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Each rule maps (index, parameter after the terms, gradient after the terms) to the new parameter
// and updates its state at that index; the expressions are those of updater.hpp's table.
struct SgdRule {
  float lr;
  float operator()(std::size_t, float w, float g) const { return w - lr * g; }
};

struct NesterovsRule {
  float lr, momentum, minus_one_minus_momentum;
  float* __restrict v;
  float operator()(std::size_t i, float w, float g) const {
    const float momentum_v_prev = momentum * v[i];
    const float v_new = momentum_v_prev - lr * g;
    v[i] = v_new;
    return w - (momentum_v_prev + minus_one_minus_momentum * v_new);
  }
};

struct AdamRule {
  float alpha_t, beta1, beta2, eps, one_minus_beta1, one_minus_beta2;
  float* __restrict m;
  float* __restrict v;
  float operator()(std::size_t i, float w, float g) const {
    const float m_new = beta1 * m[i] + one_minus_beta1 * g;
    const float v_new = beta2 * v[i] + one_minus_beta2 * g * g;
    m[i] = m_new;
    v[i] = v_new;
    return w - alpha_t * m_new / (std::sqrt(v_new) + eps);
  }
};

struct RmsPropRule {
  float lr, decay, eps, one_minus_decay;
  float* __restrict s;
  float operator()(std::size_t i, float w, float g) const {
    const float s_new = decay * s[i] + one_minus_decay * g * g;
    s[i] = s_new;
    return w - lr * g / (std::sqrt(s_new) + eps);
  }
};

// Floats a decayed range is taken in at a time: its terms are stored for the block, then the rule
// runs over it while it is in L1.
constexpr std::size_t kDecayBlock = 1024;

// The rule over [begin, end), with the range's terms compiled in or out (UpdateTerms says why a
// zero L2 is left out rather than added).
template <bool kL2, bool kDecay, typename Rule>
void rule_over(std::size_t begin, std::size_t end, const UpdateTerms& terms, float* __restrict p,
               const float* __restrict g, const Rule& rule) {
  const float l2 = terms.l2, keep = terms.decay_keep;
  if constexpr (!kDecay) {
    for (std::size_t i = begin; i < end; ++i) {
      const float w = p[i];
      p[i] = rule(i, w, kL2 ? g[i] + l2 * w : g[i]);
    }
    return;
  }
  // The decayed parameter (and gradient) are stored before the rule reads them, as the separate
  // passes stored them: in one expression the compiler may fuse the decay's multiply into the
  // rule's last subtraction, which rounds differently.
  float gradient[kDecayBlock];
  for (std::size_t block = begin; block < end; block += kDecayBlock) {
    const std::size_t count = std::min(end - block, kDecayBlock);
    float* __restrict pb = p + block;
    const float* __restrict gb = g + block;
    for (std::size_t i = 0; i < count; ++i) {
      const float w = pb[i];
      gradient[i] = kL2 ? gb[i] + l2 * w : gb[i];
      pb[i] = w * keep;
    }
    for (std::size_t i = 0; i < count; ++i) pb[i] = rule(block + i, pb[i], gradient[i]);
  }
}

template <typename Rule>
void rule_with_terms(std::size_t begin, std::size_t end, const UpdateTerms& terms, float* p,
                     const float* g, const Rule& rule) {
  if (terms.adds_l2() && terms.decays())
    return rule_over<true, true>(begin, end, terms, p, g, rule);
  if (terms.adds_l2()) return rule_over<true, false>(begin, end, terms, p, g, rule);
  if (terms.decays()) return rule_over<false, true>(begin, end, terms, p, g, rule);
  rule_over<false, false>(begin, end, terms, p, g, rule);
}

// The rule over [begin, end) of the flat buffer, each part with the terms of the range it is in.
template <typename Rule>
void rule_over_ranges(std::size_t begin, std::size_t end, const UpdateTermRanges& ranges, float* p,
                      const float* g, const Rule& rule) {
  const UpdateTerms none{};
  auto range = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                [](std::size_t at, const UpdateTerms& r) { return at < r.end; });
  std::size_t at = begin;
  for (; range != ranges.end() && range->begin < end; ++range) {
    if (range->begin > at) rule_with_terms(at, range->begin, none, p, g, rule);
    at = std::max(at, range->begin);
    const std::size_t stop = std::min(end, range->end);
    rule_with_terms(at, stop, *range, p, g, rule);
    at = stop;
  }
  if (at < end) rule_with_terms(at, end, none, p, g, rule);
}

}  // namespace

// Every rule updates each parameter from its own gradient, terms and state alone, so the pass is
// split over threads (parallel_elementwise) without changing any bit.
void updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                  float* state, const UpdateTermRanges& terms) {
  ops::check_update_terms(terms, n);
  const float adam_alpha = uses_adam_rule(h.type) ? static_cast<float>(adam_step_size(h)) : 0.0f;
  parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
    switch (h.type) {
      case UpdaterType::kSgd:
        return rule_over_ranges(begin, end, terms, params, grads, SgdRule{h.learning_rate});
      case UpdaterType::kNesterovs:
        return rule_over_ranges(
            begin, end, terms, params, grads,
            NesterovsRule{h.learning_rate, h.momentum, -h.momentum - 1.0f, state});
      case UpdaterType::kAdam:
      case UpdaterType::kAdamW:
        return rule_over_ranges(begin, end, terms, params, grads,
                                AdamRule{adam_alpha, h.beta1, h.beta2, h.epsilon, 1.0f - h.beta1,
                                         1.0f - h.beta2, state, state + n});
      case UpdaterType::kRmsProp:
        return rule_over_ranges(
            begin, end, terms, params, grads,
            RmsPropRule{h.learning_rate, h.rms_decay, h.epsilon, 1.0f - h.rms_decay, state});
    }
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
