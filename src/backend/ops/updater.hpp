// The updaters' parameters and the host-side part of their rules, shared by both backends (see
// README.md in this folder).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kinds.hpp"

namespace dl {

struct UpdaterHyper {
  UpdaterType type = UpdaterType::kSgd;
  float learning_rate = 0.0f;
  float momentum = 0.0f;                                // Nesterovs
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  // Adam (epsilon also RmsProp)
  float rms_decay = 0.95f;                              // RmsProp
  std::int64_t step = 1;  // 1-based count of updates applied so far + 1 (Adam bias correction)
};

// The terms a run of the flat buffer adds inside the updater's pass, before the rule: L2's gradient
// l2 * w (from w before the decay) and AdamW's decay w *= decay_keep (1 - lr * weightDecay). So
// the step reads and writes each parameter once, instead of an axpy pass per regularized segment
// and a scale pass per decayed one before it. A rule then sees
//   g' = g + l2 * w      (only where l2 != 0: 0 * w would turn an infinite w's gradient into NaN)
//   w' = w * decay_keep  (only where decay_keep != 1)
// The same float expressions as the separate passes gave, so the same bits.
struct UpdateTerms {
  std::size_t begin = 0, end = 0;  // [begin, end) of the flat buffer
  float l2 = 0.0f;
  float decay_keep = 1.0f;
  bool adds_l2() const { return l2 != 0.0f; }
  bool decays() const { return decay_keep != 1.0f; }
};
// In ascending order, not overlapping; parameters outside every range get no term.
using UpdateTermRanges = std::vector<UpdateTerms>;

}  // namespace dl

namespace dl::ops {

// The updater's precondition on its term ranges, on every backend.
inline void check_update_terms(const UpdateTermRanges& terms, std::size_t n) {
  std::size_t previous_end = 0;
  for (const UpdateTerms& r : terms) {
    DL_CHECK(r.begin >= previous_end && r.begin <= r.end && r.end <= n,
             "updater term ranges must be ascending, disjoint and inside the buffer");
    previous_end = r.end;
  }
}

}  // namespace dl::ops

namespace dl {

// Adam's update rule (bias-corrected step size, m and v). AdamW's decoupled weight decay is not
// part of the op: the Optimizer applies it to the trainable parameters before the step.
inline bool uses_adam_rule(UpdaterType t) {
  return t == UpdaterType::kAdam || t == UpdaterType::kAdamW;
}

// Floats of updater state per parameter: Nesterovs keeps v, Adam m and v, RmsProp the mean square.
inline std::size_t updater_state_per_parameter(UpdaterType t) {
  switch (t) {
    case UpdaterType::kSgd:
      return 0;
    case UpdaterType::kNesterovs:
      return 1;
    case UpdaterType::kAdam:
    case UpdaterType::kAdamW:
      return 2;
    case UpdaterType::kRmsProp:
      return 1;
  }
  return 0;
}

}  // namespace dl

namespace dl::ops {

// Adam's bias-corrected step size alpha_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), in double on
// the host, for every backend; epsilon when it is not finite or zero.
inline double adam_step_size(const UpdaterHyper& h) {
  DL_CHECK(h.step >= 1, "Adam needs a 1-based step, got " + std::to_string(h.step));
  const double t = static_cast<double>(h.step);
  const double alpha_t = static_cast<double>(h.learning_rate) *
                         std::sqrt(1.0 - std::pow(static_cast<double>(h.beta2), t)) /
                         (1.0 - std::pow(static_cast<double>(h.beta1), t));
  if (!std::isfinite(alpha_t) || alpha_t == 0.0) return h.epsilon;
  return alpha_t;
}

}  // namespace dl::ops
