#include <catch2/catch.hpp>

#include <cmath>

#include "core/error.hpp"

#include "optim/learning_rate_schedule.hpp"

namespace dl {
namespace {

ScheduleConfig schedule(LearningRateSchedule type, double gamma, double power = 1.0,
                        std::int64_t step = 1000) {
  ScheduleConfig s;
  s.type = type;
  s.gamma = gamma;
  s.power = power;
  s.step = step;
  return s;
}

TEST_CASE("no schedule keeps the base rate", "[optim][schedule]") {
  const ScheduleConfig none = schedule(LearningRateSchedule::kNone, 0.5);
  REQUIRE(scheduled_learning_rate(0.05, none, 0) == 0.05);
  REQUIRE(scheduled_learning_rate(0.05, none, 100000) == 0.05);
}

TEST_CASE("step schedule multiplies by gamma every `step` iterations", "[optim][schedule]") {
  const ScheduleConfig s = schedule(LearningRateSchedule::kStep, 0.5, 1.0, 10);
  REQUIRE(scheduled_learning_rate(0.1, s, 0) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, s, 9) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, s, 10) == Approx(0.05));
  REQUIRE(scheduled_learning_rate(0.1, s, 25) == Approx(0.025));
  REQUIRE(scheduled_learning_rate(0.1, s, 30) == Approx(0.0125));
}

TEST_CASE("exponential schedule multiplies by gamma every iteration", "[optim][schedule]") {
  const ScheduleConfig s = schedule(LearningRateSchedule::kExponential, 0.5);
  REQUIRE(scheduled_learning_rate(0.1, s, 0) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, s, 1) == Approx(0.05));
  REQUIRE(scheduled_learning_rate(0.1, s, 3) == Approx(0.0125));
}

TEST_CASE("inverse schedule divides by (1 + gamma*iter)^power", "[optim][schedule]") {
  const ScheduleConfig squared = schedule(LearningRateSchedule::kInverse, 0.1, 2.0);
  REQUIRE(scheduled_learning_rate(0.1, squared, 0) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, squared, 10) == Approx(0.025));    // 0.1 / 2^2
  REQUIRE(scheduled_learning_rate(0.1, squared, 30) == Approx(0.00625));  // 0.1 / 4^2
  const ScheduleConfig root = schedule(LearningRateSchedule::kInverse, 1.0, 0.5);
  REQUIRE(scheduled_learning_rate(0.1, root, 3) == Approx(0.05));  // 0.1 / sqrt(4)
}

// The warm-up, cosine and one-cycle formulas of learning_rate_schedule.hpp, written out naively.
double naive_cosine(double from, double to, double t, double length) {
  return t >= length ? to
                     : to + (from - to) * 0.5 * (1.0 + std::cos(3.141592653589793 * t / length));
}

TEST_CASE("warm-up: linear from 0, then the schedule", "[optim][schedule]") {
  ScheduleConfig s = schedule(LearningRateSchedule::kNone, 0.5);
  s.warmupIterations = 4;
  REQUIRE(scheduled_learning_rate(0.1, s, 0) == Approx(0.025));
  REQUIRE(scheduled_learning_rate(0.1, s, 1) == Approx(0.05));
  REQUIRE(scheduled_learning_rate(0.1, s, 3) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, s, 1000) == 0.1);
  // The schedule's own clock starts after the warm-up.
  ScheduleConfig step = schedule(LearningRateSchedule::kStep, 0.5, 1.0, 10);
  step.warmupIterations = 5;
  REQUIRE(scheduled_learning_rate(0.1, step, 14) == Approx(0.1));
  REQUIRE(scheduled_learning_rate(0.1, step, 15) == Approx(0.05));
}

TEST_CASE("cosine: from the base rate to minLearningRate over the run, after the warm-up",
          "[optim][schedule]") {
  ScheduleConfig s = schedule(LearningRateSchedule::kCosine, 0.1);
  s.warmupIterations = 10;
  s.totalIterations = 110;
  s.minLearningRate = 0.001;
  for (const std::int64_t i : {0, 5, 9, 10, 11, 35, 60, 85, 109, 110, 500}) {
    INFO("iteration " << i);
    const double want = i < 10 ? 0.2 * static_cast<double>(i + 1) / 10.0
                               : naive_cosine(0.2, 0.001, static_cast<double>(i - 10), 100.0);
    REQUIRE(scheduled_learning_rate(0.2, s, i) == Approx(want).epsilon(1e-12));
  }
  REQUIRE(scheduled_learning_rate(0.2, s, 60) == Approx((0.2 + 0.001) / 2));  // half way
  REQUIRE(scheduled_learning_rate(0.2, s, 110) == 0.001);
}

TEST_CASE("oneCycle: PyTorch's OneCycleLR, rate for rate", "[optim][schedule]") {
  // torch.optim.lr_scheduler.OneCycleLR(max_lr=0.4, total_steps=T, pct_start=W/T,
  // div_factor=25, final_div_factor=1e4, cycle_momentum=False), its rate at each step (PyTorch
  // 1.13). It once rose linearly from one step past its start, held the peak for two steps and
  // ended one step late.
  struct Expected {
    std::int64_t warmup, total, iteration;
    double rate;
  };
  const Expected expected[] = {{30, 100, 0, 0.016},
                               {30, 100, 1, 0.0171255122264},
                               {30, 100, 29, 0.4},
                               {30, 100, 30, 0.399798614114},
                               {30, 100, 65, 0.191027869822},
                               {30, 100, 98, 0.00020298588619},
                               {30, 100, 99, 1.6e-06},
                               {0, 50, 0, 0.399605347264},
                               {0, 50, 25, 0.187442746327},
                               {0, 50, 49, 1.6e-06},
                               {10, 32, 1, 0.0275790168091},
                               {10, 32, 10, 0.397964296519},
                               {10, 32, 21, 0.171537946197},
                               {113, 1000, 556, 0.199646619792}};
  for (const Expected& e : expected) {
    INFO("W " << e.warmup << ", T " << e.total << ", iteration " << e.iteration);
    ScheduleConfig s = schedule(LearningRateSchedule::kOneCycle, 0.1);
    s.warmupIterations = e.warmup;
    s.totalIterations = e.total;
    REQUIRE(scheduled_learning_rate(0.4, s, e.iteration) == Approx(e.rate).epsilon(1e-9));
  }
  ScheduleConfig s = schedule(LearningRateSchedule::kOneCycle, 0.1);
  s.warmupIterations = 30;
  s.totalIterations = 100;
  REQUIRE(scheduled_learning_rate(0.4, s, 500) == Approx(1.6e-06));  // past the end: its end
}

TEST_CASE("resolve_schedule_length: 0 means the run; a warm-up past the end is refused",
          "[optim][schedule]") {
  ScheduleConfig s = schedule(LearningRateSchedule::kCosine, 0.1);
  REQUIRE(resolve_schedule_length(s, 500).totalIterations == 500);
  s.totalIterations = 70;
  REQUIRE(resolve_schedule_length(s, 500).totalIterations == 70);
  s.totalIterations = 0;
  s.warmupIterations = 500;
  REQUIRE_THROWS_AS(resolve_schedule_length(s, 500), ConfigError);
  // A warm-up longer than the run is harmless without annealing.
  s.type = LearningRateSchedule::kNone;
  REQUIRE(resolve_schedule_length(s, 100).warmupIterations == 500);
}

}  // namespace
}  // namespace dl
