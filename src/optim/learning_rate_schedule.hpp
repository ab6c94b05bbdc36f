// Learning-rate schedules (DL4J's ISchedule types, plus cosine and one-cycle), as functions of the
// 0-based global iteration i. Pure functions: a resumed run gets the same rates.
#pragma once

#include <cstdint>

#include "config/config.hpp"

namespace dl {

// With W = warmupIterations, for i < W a linear warm-up from `start` to the base rate:
//   lr = start + (base - start) * (i + 1) / W,  start = base / divFactor (oneCycle), else 0;
// afterwards the schedule runs on t = i - W:
//   none: base;  step: base * gamma^floor(t / step);  exponential: base * gamma^t;
//   inverse: base / (1 + gamma * t)^power;
//   cosine: end + (base - end) * (1 + cos(pi * t / T)) / 2, T = totalIterations - W, and end
//     once t >= T; end = minLearningRate (cosine) or base / divFactor / finalDivFactor
//     (oneCycle, PyTorch's OneCycleLR with a linear rise; momentum is not cycled).
// cosine and oneCycle need a resolved totalIterations (resolve_schedule_length).
double scheduled_learning_rate(double base, const ScheduleConfig& schedule, std::int64_t iteration);

// The schedule with totalIterations set to `run_iterations` (epochs x iterations per epoch) where
// the config leaves it at 0. Throws ConfigError when cosine or oneCycle's warm-up does not end
// before the run does.
ScheduleConfig resolve_schedule_length(ScheduleConfig schedule, std::int64_t run_iterations);

}  // namespace dl
