// The updaters' parameters and the host-side part of their rules, shared by both backends (see
// README.md in this folder).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

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
