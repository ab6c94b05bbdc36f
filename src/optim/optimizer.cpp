#include "optim/optimizer.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "optim/learning_rate_schedule.hpp"

namespace dl {

namespace {
// L2's score term is half the coefficient times the sum of squares (its gradient is l2 * w).
constexpr double kL2ScoreFactor = 0.5;

UpdaterHyper fixed_hyper_parameters(const UpdaterConfig& u) {
  UpdaterHyper h;
  h.type = u.type;
  h.momentum = static_cast<float>(u.momentum);
  h.beta1 = static_cast<float>(u.beta1);
  h.beta2 = static_cast<float>(u.beta2);
  h.epsilon = static_cast<float>(u.epsilon);
  h.rms_decay = static_cast<float>(u.rmsDecay);
  return h;
}
}  // namespace

Optimizer::Optimizer(Backend& backend, const UpdaterConfig& updater, const ScheduleConfig& schedule,
                     double l2, double l2_bias, std::vector<ParameterSegment> segments,
                     std::size_t n)
    : backend_(&backend),
      hyper_(fixed_hyper_parameters(updater)),
      base_learning_rate_(effective_learning_rate(updater)),
      schedule_(schedule),
      l2_(l2),
      l2_bias_(l2_bias),
      weight_decay_(updater.type == UpdaterType::kAdamW ? updater.weightDecay : 0.0),
      weight_decay_bias_(updater.weightDecayBias),
      segments_(std::move(segments)),
      n_(n),
      state_floats_(updater_state_per_parameter(updater.type) * n) {
  for (const ParameterSegment& s : segments_) {
    DL_CHECK(s.offset <= n_ && s.count <= n_ - s.offset,
             "parameter segment [" + std::to_string(s.offset) + ", +" + std::to_string(s.count) +
                 ") lies outside the buffer of " + std::to_string(n_) + " floats");
  }
  make_update_terms();
  DL_CHECK(schedule_.type != LearningRateSchedule::kStep || schedule_.step > 0,
           "the step schedule needs a positive step");
  if (state_floats_ > 0) {
    const AllocationPurpose purpose(
        fmt::format("the updater's state ({} values per parameter, {} in all)",
                    updater_state_per_parameter(updater.type), state_floats_));
    state_ = backend_->allocate_floats(state_floats_);
    // DL4J starts RMSProp's mean square at epsilon (so the first step is not a division by
    // ~0); the other updaters start from zero.
    const float initial = updater.type == UpdaterType::kRmsProp ? hyper_.epsilon : 0.0f;
    backend_->fill(state_, state_floats_, initial);
  }
  scalar_ = backend_->allocate_floats(1);
}

Optimizer::Optimizer(Backend& backend, const Config& config, std::vector<ParameterSegment> segments,
                     std::size_t n, std::int64_t run_iterations)
    : Optimizer(backend, config.updater, resolve_schedule_length(config.schedule, run_iterations),
                config.l2, config.l2Bias, std::move(segments), n) {
  normalization_ = config.gradientNormalization;
  normalization_threshold_ = static_cast<float>(config.gradientNormalizationThreshold);
}

Optimizer::~Optimizer() {
  release();
}

Optimizer::Optimizer(Optimizer&& other) noexcept
    : backend_(other.backend_),
      hyper_(other.hyper_),
      base_learning_rate_(other.base_learning_rate_),
      schedule_(other.schedule_),
      l2_(other.l2_),
      l2_bias_(other.l2_bias_),
      weight_decay_(other.weight_decay_),
      weight_decay_bias_(other.weight_decay_bias_),
      normalization_(other.normalization_),
      normalization_threshold_(other.normalization_threshold_),
      segments_(std::move(other.segments_)),
      terms_(std::move(other.terms_)),
      term_decays_(std::move(other.term_decays_)),
      n_(other.n_),
      state_floats_(std::exchange(other.state_floats_, 0)),
      state_(std::exchange(other.state_, nullptr)),
      scalar_(std::exchange(other.scalar_, nullptr)) {}

Optimizer& Optimizer::operator=(Optimizer&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = other.backend_;
    hyper_ = other.hyper_;
    base_learning_rate_ = other.base_learning_rate_;
    schedule_ = other.schedule_;
    l2_ = other.l2_;
    l2_bias_ = other.l2_bias_;
    weight_decay_ = other.weight_decay_;
    weight_decay_bias_ = other.weight_decay_bias_;
    normalization_ = other.normalization_;
    normalization_threshold_ = other.normalization_threshold_;
    segments_ = std::move(other.segments_);
    terms_ = std::move(other.terms_);
    term_decays_ = std::move(other.term_decays_);
    n_ = other.n_;
    state_floats_ = std::exchange(other.state_floats_, 0);
    state_ = std::exchange(other.state_, nullptr);
    scalar_ = std::exchange(other.scalar_, nullptr);
  }
  return *this;
}

void Optimizer::release() noexcept {
  if (state_ != nullptr) backend_->free_bytes(state_);
  if (scalar_ != nullptr) backend_->free_bytes(scalar_);
  state_ = nullptr;
  scalar_ = nullptr;
}

double Optimizer::learning_rate(std::int64_t iteration) const {
  return scheduled_learning_rate(base_learning_rate_, schedule_, iteration);
}

void Optimizer::step(float* params, float* grads, std::int64_t iteration, double lr_multiplier) {
  DL_CHECK(iteration >= 0, "iterations are counted from 0");
  const double rate = learning_rate(iteration) * lr_multiplier;
  zero_frozen_gradients(grads);
  normalize_gradients(grads);
  UpdaterHyper h = hyper_;
  h.learning_rate = static_cast<float>(rate);
  h.step = iteration + 1;
  if (weight_decay_ != 0.0) {
    const auto keep = static_cast<float>(1.0 - rate * weight_decay_);
    for (std::size_t k = 0; k < terms_.size(); ++k)
      if (term_decays_[k]) terms_[k].decay_keep = keep;
  }
  backend_->updater_step(h, n_, params, grads, state_, terms_);
}

void Optimizer::zero_frozen_gradients(float* grads) {
  for (const ParameterSegment& s : segments_) {
    if (!s.trainable && s.count > 0) backend_->fill(grads + s.offset, s.count, 0.0f);
  }
}

// DL4J's RenormalizeL2* divide by the norm whatever the threshold: a target norm of 1.
void Optimizer::normalize_gradients(float* grads) {
  const auto to_norm = [&](std::size_t begin, std::size_t end, float threshold, bool always) {
    backend_->sum_of_squares(end - begin, grads + begin, scalar_);
    backend_->scale_to_norm(end - begin, scalar_, threshold, always, grads + begin);
  };
  const float t = normalization_threshold_;
  switch (normalization_) {
    case GradientNormalization::kNone:
      return;
    case GradientNormalization::kClipElementWiseAbsoluteValue:
      backend_->clip_values(n_, t, grads);  // frozen gradients are 0 and stay 0
      return;
    case GradientNormalization::kClipL2Global:
      to_norm(0, n_, t, false);
      return;
    case GradientNormalization::kRenormalizeL2PerLayer:
    case GradientNormalization::kClipL2PerLayer: {
      const bool renormalize = normalization_ == GradientNormalization::kRenormalizeL2PerLayer;
      for (const auto& [begin, end] : layer_ranges())
        to_norm(begin, end, renormalize ? 1.0f : t, renormalize);
      return;
    }
    case GradientNormalization::kRenormalizeL2PerParamType:
    case GradientNormalization::kClipL2PerParamType: {
      const bool renormalize = normalization_ == GradientNormalization::kRenormalizeL2PerParamType;
      for (const ParameterSegment& s : segments_) {
        if (s.trainable && s.count > 0)
          to_norm(s.offset, s.offset + s.count, renormalize ? 1.0f : t, renormalize);
      }
      return;
    }
  }
}

std::vector<std::pair<std::size_t, std::size_t>> Optimizer::layer_ranges() const {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::optional<int> current;
  for (const ParameterSegment& s : segments_) {
    if (!s.trainable || s.count == 0) continue;
    if (current != s.layer) {
      ranges.emplace_back(s.offset, s.offset + s.count);
      current = s.layer;
    }
    // A layer's segments are contiguous; a frozen one between them has a zero gradient here.
    ranges.back().second = std::max(ranges.back().second, s.offset + s.count);
  }
  return ranges;
}

// L2 on the trainable segments (l2Bias on biases), from each parameter's value before any decay;
// PyTorch's and Keras's AdamW decay: every trainable parameter (biases and batch normalization's
// parameters unless weightDecayBias is false) by lr * weightDecay, before the Adam update. Both
// inside the updater's pass (UpdateTerms). The ranges are fixed for the run, made once so that a
// step allocates nothing; step() sets the decay, whose rate follows the learning rate.
void Optimizer::make_update_terms() {
  std::vector<const ParameterSegment*> order;
  for (const ParameterSegment& s : segments_)
    if (s.trainable && s.count > 0) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](const ParameterSegment* a, const ParameterSegment* b) {
    return a->offset < b->offset;
  });
  for (const ParameterSegment* s : order) {
    UpdateTerms t;
    t.begin = s->offset;
    t.end = s->offset + s->count;
    t.l2 = static_cast<float>(s->bias_like ? l2_bias_ : l2_);
    const bool decayed = weight_decay_ != 0.0 && (weight_decay_bias_ || !s->bias_like);
    if (!t.adds_l2() && !decayed) continue;
    terms_.push_back(t);
    term_decays_.push_back(decayed);
  }
}

std::string Optimizer::describe() const {
  std::string text =
      fmt::format("updater: {}, learning rate {}", enum_name(hyper_.type), base_learning_rate_);
  if (weight_decay_ != 0.0)
    text += fmt::format(", weight decay {}{}", weight_decay_,
                        weight_decay_bias_ ? "" : " (not on biases and batch normalization)");
  if (schedule_.type != LearningRateSchedule::kNone)
    text += fmt::format("; schedule {}", enum_name(schedule_.type));
  if (schedule_.type == LearningRateSchedule::kCosine ||
      schedule_.type == LearningRateSchedule::kOneCycle)
    text += fmt::format(" over {} iterations", schedule_.totalIterations);
  if (schedule_.warmupIterations > 0)
    text += fmt::format("; linear warm-up over {} iterations", schedule_.warmupIterations);
  if (normalization_ != GradientNormalization::kNone)
    text += fmt::format("; gradientNormalization {} (threshold {})", enum_name(normalization_),
                        normalization_threshold_);
  return text;
}

double Optimizer::regularization_score(const float* params) {
  double score = 0.0;
  for (const ParameterSegment& s : segments_) {
    if (!s.trainable || s.count == 0) continue;
    const double coefficient = s.bias_like ? l2_bias_ : l2_;
    if (coefficient == 0.0) continue;
    backend_->sum_of_squares(s.count, params + s.offset, scalar_);
    float sum = 0.0f;
    backend_->download(&sum, scalar_, sizeof(sum));
    score += kL2ScoreFactor * coefficient * static_cast<double>(sum);
  }
  return score;
}

}  // namespace dl
