// The output layer's fused activation and loss, shared by both backends (see README.md in this
// folder): which loss, after which activation, and the label-smoothing arithmetic both backends
// must do identically.
//
// Softmax with cross-entropy (negativeloglikelihood == mcxent) against label-smoothed targets
// t_j = (1 - e) [j = label] + e / k (Szegedy et al. 2016; Keras's and PyTorch's
// label_smoothing): the row's loss is logsumexp(z) - sum_j t_j z_j
// = lse - ((1 - e) z_label + e/k sum_j z_j), and dL/dz_j = a_j - t_j. With e = 0 both are the
// unsmoothed loss and gradient, bit for bit.
#pragma once

#include <string>

#include "core/error.hpp"
#include "core/kinds.hpp"

namespace dl {

struct OutputLoss {
  LossFunction function = LossFunction::kNegativeLogLikelihood;
  Activation activation = Activation::kSoftmax;
  float label_smoothing = 0.0f;  // e in [0, 1); softmax with cross-entropy only
};

}  // namespace dl

namespace dl::ops {

constexpr bool is_softmax_cross_entropy(const OutputLoss& loss) {
  return loss.function != LossFunction::kMse && loss.activation == Activation::kSoftmax;
}

inline void check_output_loss(const OutputLoss& loss) {
  DL_CHECK(loss.label_smoothing >= 0.0f && loss.label_smoothing < 1.0f,
           "label smoothing must lie in [0, 1), got " + std::to_string(loss.label_smoothing));
  DL_CHECK(loss.label_smoothing == 0.0f || is_softmax_cross_entropy(loss),
           "label smoothing needs softmax with cross-entropy");
}

// The target weight every class gets from smoothing: e / k.
constexpr float smoothing_share(float smoothing, int k) {
  return smoothing / static_cast<float>(k);
}

// One row's loss from its log-sum-exp, its label's logit and the sum of its logits.
constexpr double smoothed_cross_entropy(double log_sum_exp, double z_label, double z_sum,
                                        float smoothing, int k) {
  if (smoothing == 0.0f) return log_sum_exp - z_label;  // z_sum unused (it may be inf)
  return log_sum_exp - ((1.0 - smoothing) * z_label + smoothing / k * z_sum);
}

// grad_scale * (a_j - t_j) for class j with probability a.
constexpr float softmax_cross_entropy_gradient(float a, bool is_label, float grad_scale,
                                               float smoothing, int k) {
  const float off_label = grad_scale * (a - smoothing_share(smoothing, k));
  return is_label ? off_label - grad_scale * (1.0f - smoothing) : off_label;
}

}  // namespace dl::ops
