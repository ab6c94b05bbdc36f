#include "optim/loss_scaler.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dl {

namespace {

// save_state's layout: "scale=<shortest exact decimal> good_steps=<n> skipped_steps=<n>
// non_finite_skips=<n>"; the last field is absent from a checkpoint of an older dl-train.
constexpr const char* kStateFormat = "scale={} good_steps={} skipped_steps={} non_finite_skips={}";
constexpr const char* kScaleKey = "scale=";
constexpr const char* kGoodStepsKey = " good_steps=";
constexpr const char* kSkippedStepsKey = " skipped_steps=";
constexpr const char* kNonFiniteSkipsKey = " non_finite_skips=";

[[noreturn]] void fail_state(const std::string& text, const char* what) {
  throw CheckpointError(fmt::format(
      "loss scaler state '{}' {}; the checkpoint is damaged: resume from an earlier one", text,
      what));
}

// Reads the number that follows `key` at `at`, up to the next space or the end; advances `at`.
template <class Number, class Parse>
Number read_after(const std::string& text, std::size_t& at, const char* key, Parse parse) {
  const std::string expected(key);
  if (text.compare(at, expected.size(), expected) != 0) fail_state(text, "is malformed");
  at += expected.size();
  const std::size_t end = std::min(text.find(' ', at), text.size());
  const std::string field = text.substr(at, end - at);
  char* stop = nullptr;
  errno = 0;
  const Number value = parse(field.c_str(), &stop);
  if (field.empty() || *stop != '\0' || errno == ERANGE) fail_state(text, "is malformed");
  at = end;
  return value;
}

}  // namespace

LossScaler::LossScaler(LossScalingMode mode, const LossScalingConfig& settings)
    : mode_(mode),
      settings_(settings),
      scale_(mode == LossScalingMode::kNone ? 1.0 : settings.initialScale) {}

void LossScaler::on_overflow() {
  ++skipped_steps_;
  good_steps_ = 0;
  scale_ *= settings_.backoffFactor;
  if (scale_ < kMinimumScale) {
    throw DivergenceError(fmt::format(
        "the gradients overflow at every loss scale (it fell to {}, below the minimum {}, after "
        "{} skipped steps); the model has diverged: lower updater.learningRate, or resume from "
        "an earlier checkpoint",
        scale_, kMinimumScale, skipped_steps_));
  }
}

void LossScaler::on_good_step() {
  if (++good_steps_ < settings_.growthInterval) return;
  good_steps_ = 0;
  scale_ = std::min(scale_ * settings_.growthFactor, kMaximumScale);
}

std::string LossScaler::save_state() const {
  return fmt::format(kStateFormat, scale_, good_steps_, skipped_steps_, non_finite_skips_);
}

void LossScaler::restore_state(const std::string& text) {
  std::size_t at = 0;
  const double scale = read_after<double>(
      text, at, kScaleKey, [](const char* s, char** e) { return std::strtod(s, e); });
  const auto to_integer = [](const char* s, char** e) { return std::strtoll(s, e, 10); };
  const long long good = read_after<long long>(text, at, kGoodStepsKey, to_integer);
  const long long skipped = read_after<long long>(text, at, kSkippedStepsKey, to_integer);
  const long long non_finite =
      at == text.size() ? 0 : read_after<long long>(text, at, kNonFiniteSkipsKey, to_integer);
  if (at != text.size()) fail_state(text, "is malformed");
  if (!std::isfinite(scale) || scale < kMinimumScale || scale > kMaximumScale)
    fail_state(text, "holds a scale out of range");
  if (good < 0 || skipped < 0 || non_finite < 0) fail_state(text, "holds a negative count");
  // Only a dynamic scale travels: a static or no scale is the config's, which a resume may set
  // anew (a checkpoint saved with another mode carries its own scale).
  if (dynamic()) {
    scale_ = scale;
    good_steps_ = good;
  }
  skipped_steps_ = skipped;
  non_finite_skips_ = non_finite;
}

}  // namespace dl
