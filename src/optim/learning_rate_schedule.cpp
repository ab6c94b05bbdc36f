#include "optim/learning_rate_schedule.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace dl {

namespace {

constexpr double kPi = 3.141592653589793;
constexpr double kHalf = 0.5;

bool anneals(const ScheduleConfig& s) {
  return s.type == LearningRateSchedule::kCosine || s.type == LearningRateSchedule::kOneCycle;
}

double one_cycle_start(double base, const ScheduleConfig& s) {
  return base / s.divFactor;
}

// From `from` at t = 0 to `to` at t = length, along half a cosine wave.
double cosine_anneal(double from, double to, std::int64_t t, std::int64_t length) {
  if (t >= length) return to;
  const double progress = static_cast<double>(t) / static_cast<double>(length);
  return to + (from - to) * kHalf * (1.0 + std::cos(kPi * progress));
}

// PyTorch's OneCycleLR (anneal_strategy 'cos', two phases) with pct_start = W/T: from
// base/divFactor at iteration 0 up to base at iteration W - 1, then down to
// base/divFactor/finalDivFactor at iteration T - 1, each along half a cosine wave. Without a
// warm-up it starts just below the peak, as PyTorch's pct_start 0 does.
double one_cycle(double base, const ScheduleConfig& s, std::int64_t iteration) {
  const double start = one_cycle_start(base, s), end = start / s.finalDivFactor;
  const double peak = static_cast<double>(s.warmupIterations) - 1.0;
  const double last = static_cast<double>(s.totalIterations) - 1.0;
  const double i = static_cast<double>(iteration);
  const auto anneal = [](double from, double to, double progress) {
    return to + (from - to) * kHalf * (1.0 + std::cos(kPi * progress));
  };
  if (i >= last) return end;
  if (i <= peak) return peak <= 0.0 ? base : anneal(start, base, i / peak);
  return anneal(base, end, (i - peak) / (last - peak));
}

}  // namespace

double scheduled_learning_rate(double base, const ScheduleConfig& schedule,
                               std::int64_t iteration) {
  DL_CHECK(iteration >= 0, "iterations are counted from 0");
  const std::int64_t warmup = schedule.warmupIterations;
  if (schedule.type == LearningRateSchedule::kOneCycle) {
    DL_CHECK(schedule.totalIterations > warmup,
             "oneCycle needs a resolved totalIterations beyond the warm-up");
    return one_cycle(base, schedule, iteration);
  }
  if (iteration < warmup)
    return base * static_cast<double>(iteration + 1) / static_cast<double>(warmup);
  const std::int64_t t = iteration - warmup;
  const double steps = static_cast<double>(t);
  switch (schedule.type) {
    case LearningRateSchedule::kNone:
      return base;
    case LearningRateSchedule::kStep: {
      DL_CHECK(schedule.step > 0, "the step schedule needs a positive step");
      return base * std::pow(schedule.gamma, static_cast<double>(t / schedule.step));
    }
    case LearningRateSchedule::kExponential:
      return base * std::pow(schedule.gamma, steps);
    case LearningRateSchedule::kInverse:
      return base / std::pow(1.0 + schedule.gamma * steps, schedule.power);
    case LearningRateSchedule::kCosine:
      DL_CHECK(schedule.totalIterations > warmup,
               "cosine needs a resolved totalIterations beyond the warm-up");
      return cosine_anneal(base, schedule.minLearningRate, t, schedule.totalIterations - warmup);
    case LearningRateSchedule::kOneCycle:
      return one_cycle(base, schedule, iteration);  // taken above
  }
  return base;
}

ScheduleConfig resolve_schedule_length(ScheduleConfig schedule, std::int64_t run_iterations) {
  if (schedule.totalIterations == 0) schedule.totalIterations = run_iterations;
  if (anneals(schedule) && schedule.warmupIterations >= schedule.totalIterations) {
    throw ConfigError(fmt::format(
        "learningRateSchedule: warmupIterations ({}) is not below the schedule's {} iterations "
        "(totalIterations, or epochs x iterations per epoch when it is 0); shorten the warm-up "
        "or train longer",
        schedule.warmupIterations, schedule.totalIterations));
  }
  return schedule;
}

}  // namespace dl
