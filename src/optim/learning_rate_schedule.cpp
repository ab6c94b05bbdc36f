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

}  // namespace

double scheduled_learning_rate(double base, const ScheduleConfig& schedule,
                               std::int64_t iteration) {
  DL_CHECK(iteration >= 0, "iterations are counted from 0");
  const std::int64_t warmup = schedule.warmupIterations;
  if (iteration < warmup) {
    const double start =
        schedule.type == LearningRateSchedule::kOneCycle ? one_cycle_start(base, schedule) : 0.0;
    return start +
           (base - start) * static_cast<double>(iteration + 1) / static_cast<double>(warmup);
  }
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
    case LearningRateSchedule::kOneCycle: {
      DL_CHECK(schedule.totalIterations > warmup,
               "cosine and oneCycle need a resolved totalIterations beyond the warm-up");
      const double end = schedule.type == LearningRateSchedule::kCosine
                             ? schedule.minLearningRate
                             : one_cycle_start(base, schedule) / schedule.finalDivFactor;
      return cosine_anneal(base, end, t, schedule.totalIterations - warmup);
    }
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
