// The updater of one replica: gradient normalization, L2 regularization, the learning-rate
// schedule, AdamW's decoupled weight decay and one backend updater step over the whole flat
// parameter buffer, with its state in backend memory (so it can be averaged across workers and
// saved in checkpoints as one buffer). Gradient normalization and weight decay add no state: a
// resumed run continues bit for bit from the parameters and the updater state alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "nn/parameter_segment.hpp"

namespace dl {

class Optimizer {
 public:
  // n = floats in the flat buffer; segments cover its trainable parts (weights and biases) and
  // its non-trainable ones. Allocates the updater state on `backend` (zeroed); `backend` must
  // outlive the optimizer.
  Optimizer(Backend& backend, const UpdaterConfig& updater, const ScheduleConfig& schedule,
            double l2, double l2_bias, std::vector<ParameterSegment> segments, std::size_t n);
  // A run's optimizer: the config's updater, schedule (its length resolved against
  // `run_iterations`, see resolve_schedule_length), L2 and gradient normalization.
  Optimizer(Backend& backend, const Config& config, std::vector<ParameterSegment> segments,
            std::size_t n, std::int64_t run_iterations);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&& other) noexcept;
  Optimizer& operator=(Optimizer&& other) noexcept;

  // One step, in this order: zeroes the gradient of non-trainable segments, normalizes the
  // gradient (gradientNormalization), then applies one updater step to the whole buffer, which
  // adds L2 (l2 * w on weight segments, l2Bias * b on bias segments) to the gradient it reads and
  // multiplies the trainable parameters by 1 - lr * weightDecay (AdamW) before the rule, in the
  // same pass. lr is the rate of `iteration` (0-based global step; Adam's t = iteration + 1)
  // times `lr_multiplier` (the trainer's linear scaling with warm-up). `grads` is modified by
  // the first two only.
  void step(float* params, float* grads, std::int64_t iteration, double lr_multiplier = 1.0);

  // The configured (or DL4J default) learning rate with the schedule applied.
  double learning_rate(std::int64_t iteration) const;
  const ScheduleConfig& schedule() const { return schedule_; }
  // One line for the start of a run: updater, rate, schedule (resolved length), weight decay and
  // gradient normalization.
  std::string describe() const;

  // 0.5 * l2 * sum(w^2) + 0.5 * l2Bias * sum(b^2) over the trainable segments: the term DL4J
  // adds to the reported score. Reads one scalar back from the backend per regularized segment.
  double regularization_score(const float* params);

  // The updater state in backend memory (null for SGD, which has none): for a checkpoint, or
  // for averaging across workers.
  float* state() { return state_; }
  std::size_t state_floats() const { return state_floats_; }
  UpdaterType type() const { return hyper_.type; }

 private:
  void release() noexcept;
  void zero_frozen_gradients(float* grads);
  void normalize_gradients(float* grads);
  // Fills terms_ and term_decays_, in ascending order of the flat buffer.
  void make_update_terms();
  // [begin, end) of the flat buffer per layer with trainable parameters, in order.
  std::vector<std::pair<std::size_t, std::size_t>> layer_ranges() const;

  Backend* backend_;
  UpdaterHyper hyper_;  // fixed hyper-parameters; learning rate and step are set per call
  double base_learning_rate_;
  ScheduleConfig schedule_;
  double l2_, l2_bias_;
  double weight_decay_ = 0.0;  // AdamW only
  bool weight_decay_bias_ = true;
  GradientNormalization normalization_ = GradientNormalization::kNone;
  float normalization_threshold_ = 1.0f;
  std::vector<ParameterSegment> segments_;
  UpdateTermRanges terms_;         // L2 and decay per range (make_update_terms); decay set per step
  std::vector<bool> term_decays_;  // per term: whether AdamW decays it
  std::size_t n_;
  std::size_t state_floats_;
  float* state_ = nullptr;
  float* scalar_ = nullptr;  // backend scalar that sum_of_squares writes to
};

}  // namespace dl
