// CPU implementation of the Backend's fused output activation + loss op (see
// backend/backend.hpp for the contract).
//
// Definitions (DL4J's), with y the one-hot row of the label and a = act(z):
//   NEGATIVELOGLIKELIHOOD == MCXENT: loss = -sum_j y_j log(a_j) = -log(a_label)
//     softmax: computed through log-softmax (loss = logsumexp(z) - z_label) and
//              dz = grad_scale * (a - y) directly, so log(0) and 0/0 never occur; with label
//              smoothing y is the smoothed target (backend/ops/output_loss.hpp).
//     other activations: a_label is clamped below at kMinLogProbability before the log and the
//              division, dL/da = -y / a, then through activation_backward.
//   MSE: loss = sum_j (a_j - y_j)^2 / k, dL/da = 2 (a - y) / k, then through activation_backward.
// loss_sum[0] is the sum of the n per-sample losses (accumulated in double); dz is scaled by
// grad_scale. `out` may alias z.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Probabilities below this are treated as this value inside log() for non-softmax activations:
// the loss of a sample stays finite (about 23) instead of becoming inf.
inline constexpr float kMinLogProbability = 1e-10f;

void output_loss(const OutputLoss& op, int n, int k, const float* z, const std::int32_t* labels,
                 float* out, float* dz, float grad_scale, float* loss_sum);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
