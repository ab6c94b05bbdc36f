#include "backend/cpu/output_loss.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/activation.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/ops/output_loss.hpp"
#include "core/error.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Softmax + cross-entropy of one row, with `e` room for its k exponentials (each computed once).
// Returns the sample's loss.
double softmax_cross_entropy_row(std::size_t k, const float* z, std::int32_t label, float* out,
                                 float* dz, float grad_scale, float smoothing, double* e) {
  const float z_label = z[label];  // read before `out` (which may alias z) is written
  float row_max = z[0];
  for (std::size_t j = 1; j < k; ++j) row_max = std::max(row_max, z[j]);
  double sum = 0.0, z_sum = 0.0;
  for (std::size_t j = 0; j < k; ++j) {
    e[j] = std::exp(static_cast<double>(z[j] - row_max));
    sum += e[j];
    z_sum += z[j];
  }
  const double log_sum_exp = static_cast<double>(row_max) + std::log(sum);
  const double inv_sum = 1.0 / sum;
  const int classes = static_cast<int>(k);
  for (std::size_t j = 0; j < k; ++j) {
    const float a = static_cast<float>(e[j] * inv_sum);
    out[j] = a;
    dz[j] = ops::softmax_cross_entropy_gradient(a, static_cast<std::int32_t>(j) == label,
                                                grad_scale, smoothing, classes);
  }
  return ops::smoothed_cross_entropy(log_sum_exp, z_label, z_sum, smoothing, classes);
}

// Rows of softmax + cross-entropy in tasks of kRowsPerTask (the output layer runs between two
// parallel layers, so a serial loss would leave the other threads waiting); each row's loss is
// kept and the losses are added in row order afterwards, so the sum is the same on any thread
// count.
constexpr int kRowsPerTask = 32;

double softmax_cross_entropy(std::size_t rows, std::size_t cols, const float* z,
                             const std::int32_t* labels, float* out, float* dz, float grad_scale,
                             float smoothing) {
  thread_local std::vector<double> caller_row_losses;
  // A reference: inside the tasks the name would be each helper's own thread_local.
  std::vector<double>& row_losses = caller_row_losses;
  row_losses.resize(rows);
  const int n = static_cast<int>(rows);
  parallel_slices(task_count(n, kRowsPerTask), [&](int task) {
    thread_local std::vector<double> exponentials;
    exponentials.resize(cols);
    const std::size_t begin = static_cast<std::size_t>(task) * kRowsPerTask;
    const std::size_t end = std::min(rows, begin + kRowsPerTask);
    for (std::size_t r = begin; r < end; ++r) {
      row_losses[r] =
          softmax_cross_entropy_row(cols, z + r * cols, labels[r], out + r * cols, dz + r * cols,
                                    grad_scale, smoothing, exponentials.data());
    }
  });
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) total += row_losses[r];
  return total;
}

// Cross-entropy for a non-softmax activation: out already holds a. Writes dL/da (scaled) into
// dz and returns the sample's loss.
double cross_entropy_row(std::size_t k, const float* a, std::int32_t label, float* dz,
                         float grad_scale) {
  const float p = std::max(a[label], kMinLogProbability);
  for (std::size_t j = 0; j < k; ++j) dz[j] = 0.0f;
  dz[label] = -grad_scale / p;
  return -std::log(static_cast<double>(p));
}

// Mean squared error against the one-hot label: out already holds a. Writes dL/da (scaled) into
// dz and returns the sample's loss.
double mse_row(std::size_t k, const float* a, std::int32_t label, float* dz, float grad_scale) {
  const float grad_factor = grad_scale * 2.0f / static_cast<float>(k);
  double squared = 0.0;
  for (std::size_t j = 0; j < k; ++j) {
    const float diff = a[j] - (static_cast<std::int32_t>(j) == label ? 1.0f : 0.0f);
    squared += static_cast<double>(diff) * diff;
    dz[j] = grad_factor * diff;
  }
  return squared / static_cast<double>(k);
}

}  // namespace

void output_loss(const OutputLoss& op, int n, int k, const float* z, const std::int32_t* labels,
                 float* out, float* dz, float grad_scale, float* loss_sum) {
  ops::check_output_loss(op);
  const Activation act = op.activation;
  DL_CHECK(n >= 0 && k > 0, "output_loss needs n >= 0 and k > 0, got n=" + std::to_string(n) +
                                " k=" + std::to_string(k));
  const std::size_t rows = static_cast<std::size_t>(n);
  const std::size_t cols = static_cast<std::size_t>(k);
  for (std::size_t r = 0; r < rows; ++r)
    DL_CHECK(labels[r] >= 0 && labels[r] < k, "label " + std::to_string(labels[r]) + " of sample " +
                                                  std::to_string(r) + " outside [0, " +
                                                  std::to_string(k) + ")");

  const bool cross_entropy = op.function != LossFunction::kMse;
  double total = 0.0;
  if (ops::is_softmax_cross_entropy(op)) {
    total = softmax_cross_entropy(rows, cols, z, labels, out, dz, grad_scale, op.label_smoothing);
    loss_sum[0] = static_cast<float>(total);
    return;
  }

  activation_forward(act, rows, cols, z, out);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* a = out + r * cols;
    float* d = dz + r * cols;
    total += cross_entropy ? cross_entropy_row(cols, a, labels[r], d, grad_scale)
                           : mse_row(cols, a, labels[r], d, grad_scale);
  }
  activation_backward(act, rows, cols, z, out, dz, dz);
  loss_sum[0] = static_cast<float>(total);
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
