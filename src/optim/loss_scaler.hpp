// The loss scale of one replica for mixed-precision training, with the dynamic rules: the loss
// gradient is multiplied by scale() before the backward pass and the gradients by 1/scale()
// before the update. A step whose gradients overflow is skipped and the scale backs off; after
// growthInterval good steps in a row it grows again. Powers of two keep every multiplication
// exact, so a run with loss scaling and no overflow takes the same steps as one without.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "config/config_limits.hpp"

namespace dl {

class LossScaler {
 public:
  // A dynamic scale below this fails the run: scaling down no longer keeps the gradients finite.
  static constexpr double kMinimumScale = config_limits::kMinLossScale;
  // Growth stops here: the largest power of two a float holds.
  static constexpr double kMaximumScale = config_limits::kMaxLossScale;

  // Mode kNone keeps the scale at 1; kStatic keeps it at settings.initialScale.
  LossScaler(LossScalingMode mode, const LossScalingConfig& settings);

  LossScalingMode mode() const { return mode_; }
  bool enabled() const { return mode_ != LossScalingMode::kNone; }
  bool dynamic() const { return mode_ == LossScalingMode::kDynamic; }

  double scale() const { return scale_; }
  // What the gradients are multiplied by after the backward pass (exact for a power of two).
  float inverse_scale() const { return static_cast<float>(1.0 / scale_); }
  std::int64_t good_steps() const { return good_steps_; }        // in a row, since the last change
  std::int64_t skipped_steps() const { return skipped_steps_; }  // over the run, for overflow
  // Over the run: steps skipped for a non-finite loss or gradient (onNonFiniteLoss: skip). The
  // scaler keeps the count because its state travels in checkpoints, so a resumed run's count is
  // an uninterrupted one's.
  std::int64_t non_finite_skips() const { return non_finite_skips_; }
  void on_non_finite_skip() { ++non_finite_skips_; }
  // Steps this process applied (any mode), for telling an epoch that trained nothing; not saved.
  std::int64_t applied_steps() const { return applied_steps_; }
  void on_applied_step() { ++applied_steps_; }

  // Dynamic mode only. An overflowing step: counted as skipped, the scale times backoffFactor and
  // the good-step count reset. Throws DivergenceError when the scale falls below kMinimumScale.
  void on_overflow();
  // Dynamic mode only. A finite step: after growthInterval of them in a row the scale grows by
  // growthFactor (up to kMaximumScale).
  void on_good_step();

  // The state as one line of text for a checkpoint, and back. restore_state throws
  // CheckpointError when the text is not a state save_state wrote; it takes the scale only in
  // dynamic mode (the others' is the config's), the counts always.
  std::string save_state() const;
  void restore_state(const std::string& text);

 private:
  LossScalingMode mode_;
  LossScalingConfig settings_;
  double scale_;
  std::int64_t good_steps_ = 0;
  std::int64_t skipped_steps_ = 0;
  std::int64_t non_finite_skips_ = 0;
  std::int64_t applied_steps_ = 0;
};

}  // namespace dl
