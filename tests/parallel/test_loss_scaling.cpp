// Dynamic loss scaling in the data-parallel trainer: bit-identical to no scaling at powers of two,
// growth, overflow and back-off (one decision per sync in synchronous mode, one per worker when
// averaging), exact resume with the scaler's state, and a non-finite loss named by its iteration.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel_test_support.hpp"
#include "trainer_fixture.hpp"

using namespace dl::testing::trainer;  // the shared network, data and run helper

namespace {

// A scale far too large for half precision: with batch 4 the first loss gradients overflow.
constexpr int kTooLargeScaleExponent = 24;
const double kTooLargeScale = std::ldexp(1.0, kTooLargeScaleExponent);
constexpr float kHalfMax = 65504.0f;  // the largest finite IEEE half

// The CPU backend with the loss gradient limited to half precision's range, as a HALF backend
// stores it: larger values become infinite. (Float's own range is not reached by this small
// network even at a scale of 2^127.)
class HalfRangeBackend : public dl::CpuBackend {
 public:
  void output_loss(const dl::OutputLoss& op, int n, int k, const float* z,
                   const std::int32_t* labels, float* out, float* dz, float grad_scale,
                   float* loss_sum) override {
    CpuBackend::output_loss(op, n, k, z, labels, out, dz, grad_scale, loss_sum);
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) * k; ++i) {
      if (std::fabs(dz[i]) > kHalfMax) dz[i] = std::copysign(INFINITY, dz[i]);
    }
  }
};

std::unique_ptr<dl::Backend> half_range_backend(int) {
  return std::make_unique<HalfRangeBackend>();
}

Config with_loss_scaling(Config c, double initial_scale, std::int64_t growth_interval = 2000) {
  c.lossScaling.mode = dl::LossScalingMode::kDynamic;
  c.lossScaling.initialScale = initial_scale;
  c.lossScaling.growthInterval = growth_interval;
  return c;
}

// What each sync point of a one-worker run saw: the parameters after the round and the scaler.
struct ScaledStep {
  std::vector<float> params;
  double scale = 0;
  std::int64_t skipped = 0;
};

std::vector<ScaledStep> record_scaled_steps(ParallelTrainer& trainer) {
  std::vector<ScaledStep> steps;
  std::int64_t iteration = 0;
  trainer.run_epoch(0, 0, iteration, [&](const dl::SyncPoint&) {
    steps.push_back({parameters_of(trainer), trainer.loss_scaler(0).scale(),
                     trainer.loss_scaler(0).skipped_steps()});
    return dl::SyncAction::kContinue;
  });
  return steps;
}

}  // namespace

TEST_CASE("power-of-two loss scales train bit-identically to no scaling (both modes)",
          "[loss_scaling]") {
  // 8 rounds of 2 x 64, or 16 of 1 x 64 (no short round); growth every 3 good steps.
  const dl::Dataset data = random_dataset(64 * 2 * 8, 50);
  constexpr int kGrowthInterval = 3;
  for (const char* parallel :
       {"{mode: synchronous, workers: 2}", "{mode: averaging, workers: 2, averagingFrequency: 3}",
        "{mode: averaging, workers: 1}"}) {
    const Config plain = make_config(parallel, 64, "{type: nesterovs, learningRate: 0.05}");
    const auto expected = train_parameters(plain, data);
    for (double initial : {1.0, 1024.0}) {
      INFO(parallel << ", initialScale " << initial);
      const Config scaled = with_loss_scaling(plain, initial, kGrowthInterval);
      ParallelTrainer trainer(
          scaled, data, [](int) { return std::make_unique<dl::CpuBackend>(); },
          collective_for(scaled.parallel.workers), single_process());
      trainer.initialize(scaled.seed);
      std::int64_t iteration = 0;
      trainer.run_epoch(0, 0, iteration,
                        [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; });
      CHECK(parameters_of(trainer) == expected);
      for (int w = 0; w < trainer.workers(); ++w) {
        CHECK(trainer.loss_scaler(w).skipped_steps() == 0);
        const int rounds = static_cast<int>(trainer.rounds_per_epoch());
        CHECK(trainer.loss_scaler(w).scale() == initial * (1 << (rounds / kGrowthInterval)));
      }
    }
  }
}

TEST_CASE("the scale grows by growthFactor after every growthInterval good steps",
          "[loss_scaling]") {
  const dl::Dataset data = random_dataset(16 * 10, 51);
  Config c =
      with_loss_scaling(make_config("{workers: 1}", 16, "{type: sgd, learningRate: 0.1}"), 1.0, 3);
  c.lossScaling.growthFactor = 4.0;
  c.output.scoreEveryIterations = 1;  // one worker meets the listeners every round: each is seen
  ParallelTrainer trainer(c, data, half_range_backend, collective_for(1), single_process());
  trainer.initialize(c.seed);
  const std::vector<ScaledStep> steps = record_scaled_steps(trainer);
  REQUIRE(steps.size() == 10);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    INFO("after step " << i + 1);
    CHECK(steps[i].scale == std::pow(4.0, static_cast<double>((i + 1) / 3)));
    CHECK(steps[i].skipped == 0);
  }
}

TEST_CASE("a scale too large overflows: steps are skipped and the scale backs off until they fit",
          "[loss_scaling]") {
  const dl::Dataset data = random_dataset(4 * 24, 52);
  Config c = with_loss_scaling(make_config("{workers: 1}", 4, "{type: sgd, learningRate: 0.1}"),
                               kTooLargeScale);
  c.data.shuffle = false;
  c.output.scoreEveryIterations = 1;  // one worker meets the listeners every round: each is seen

  // Independently: while every step is skipped the parameters stay the initial ones, so step i
  // overflows exactly when batch i's gradient at scale 2^(24-i) is not finite.
  HalfRangeBackend backend;
  dl::Model model(c, backend, c.batchSize);
  model.initialize(c.seed);
  const std::vector<float> initial(model.parameters(),
                                   model.parameters() + model.parameter_count());
  const dl::EpochPlan plan(data.size(), c.batchSize, 1, c.seed, 0, c.data.shuffle);
  int expected_skips = 0;
  for (;; ++expected_skips) {
    REQUIRE(expected_skips < plan.rounds());
    const auto batch = plan.batch(expected_skips, 0);
    data.gather(batch.indices, batch.count, model.input(), model.labels());
    dl::StepContext ctx;
    ctx.training = true;
    ctx.seed = c.seed;
    ctx.iteration = static_cast<std::uint64_t>(expected_skips);
    model.forward(static_cast<int>(batch.count), ctx);
    const float scale =
        static_cast<float>(std::ldexp(1.0, kTooLargeScaleExponent - expected_skips));
    model.backward(static_cast<int>(batch.count), (1.0f / batch.count) * scale);
    if (backend.all_finite(model.parameter_count(), model.gradients())) break;
  }
  REQUIRE(expected_skips >= 2);  // the test means something only if some steps overflow

  ParallelTrainer trainer(c, data, half_range_backend, collective_for(1), single_process());
  trainer.initialize(c.seed);
  const std::vector<ScaledStep> steps = record_scaled_steps(trainer);
  REQUIRE(steps.size() == static_cast<std::size_t>(plan.rounds()));
  for (int i = 0; i < expected_skips; ++i) {
    INFO("skipped step " << i);
    CHECK(steps[i].params == initial);
    CHECK(steps[i].skipped == i + 1);
    CHECK(steps[i].scale == std::ldexp(1.0, kTooLargeScaleExponent - (i + 1)));
  }
  // Then training proceeds; any later overflow is skipped the same way, never applied.
  CHECK(steps[expected_skips].params != initial);
  CHECK(steps[expected_skips].skipped == expected_skips);
  for (std::size_t i = 1; i < steps.size(); ++i) {
    INFO("step " << i);
    const bool skipped = steps[i].skipped == steps[i - 1].skipped + 1;
    CHECK((skipped || steps[i].skipped == steps[i - 1].skipped));
    CHECK((steps[i].params == steps[i - 1].params) == skipped);
    CHECK(steps[i].scale == (skipped ? steps[i - 1].scale / 2 : steps[i - 1].scale));
  }
  for (float p : steps.back().params) REQUIRE(std::isfinite(p));
}

TEST_CASE("overflow with several workers: one decision when synchronous, one each when averaging",
          "[loss_scaling]") {
  const dl::Dataset data = random_dataset(2 * 4 * 12, 53);
  for (const char* parallel : {"{mode: synchronous, workers: 2}",
                               "{mode: averaging, workers: 2, averagingFrequency: 2}"}) {
    INFO(parallel);
    const Config c = with_loss_scaling(make_config(parallel, 4, "{type: sgd, learningRate: 0.1}"),
                                       kTooLargeScale);
    ParallelTrainer trainer(c, data, half_range_backend, collective_for(2), single_process());
    trainer.initialize(c.seed);
    const std::vector<float> initial = parameters_of(trainer);
    std::int64_t iteration = 0;
    trainer.run_epoch(0, 0, iteration, [&](const dl::SyncPoint&) {
      if (c.parallel.mode == dl::ParallelMode::kSynchronous) {
        CHECK(trainer.loss_scaler(1).save_state() == trainer.loss_scaler(0).save_state());
      }
      return dl::SyncAction::kContinue;
    });
    const std::vector<float> trained = parameters_of(trainer);
    CHECK(trained != initial);
    for (float p : trained) REQUIRE(std::isfinite(p));
    for (int w = 0; w < 2; ++w) {
      const dl::LossScaler& s = trainer.loss_scaler(w);
      CHECK(s.skipped_steps() >= 1);
      CHECK(s.scale() ==
            std::ldexp(1.0, kTooLargeScaleExponent - static_cast<int>(s.skipped_steps())));
    }
  }
}

TEST_CASE("stopping at a sync point and resuming in a new trainer with the scaler state is exact",
          "[loss_scaling]") {
  // 2 epochs of 9 rounds; overflows at the start and growth every 2 good steps, so the scale
  // moves both ways before and after the stop.
  const dl::Dataset data = random_dataset(2 * 4 * 9, 54);
  const Config c = with_loss_scaling(
      make_config("{mode: averaging, workers: 2, averagingFrequency: 3, averageUpdaters: false}", 4,
                  "{type: nesterovs, learningRate: 0.05}"),
      kTooLargeScale, 2);
  const auto make_trainer = [&] {
    return std::make_unique<ParallelTrainer>(c, data, half_range_backend, collective_for(2),
                                             single_process());
  };
  const auto keep_going = [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; };

  auto straight = make_trainer();
  straight->initialize(c.seed);
  std::int64_t iteration = 0;
  for (int e = 0; e < 2; ++e) straight->run_epoch(e, 0, iteration, keep_going);

  auto first = make_trainer();
  first->initialize(c.seed);
  iteration = 0;
  const std::int64_t next = first->run_epoch(0, 0, iteration, [](const dl::SyncPoint& p) {
    return p.round == 5 ? dl::SyncAction::kStop : dl::SyncAction::kContinue;
  });
  REQUIRE(next == 6);
  // What a checkpoint holds: the averaged parameters, each worker's updater and scaler state.
  const dl::testing::SavedTrainer saved = dl::testing::save_trainer(*first);
  CHECK(first->loss_scaler(0).skipped_steps() >= 1);
  first.reset();

  auto resumed = make_trainer();
  dl::testing::restore_trainer(*resumed, saved);
  resumed->run_epoch(0, next, iteration, keep_going);
  resumed->run_epoch(1, 0, iteration, keep_going);
  CHECK(iteration == 18);
  CHECK(parameters_of(*resumed) == parameters_of(*straight));
  for (int w = 0; w < 2; ++w) {
    CHECK(resumed->loss_scaler(w).save_state() == straight->loss_scaler(w).save_state());
  }
}

namespace {
// Worker 1's fourth batch (iteration 3) gets a NaN loss and gradient.
constexpr int kPoisonedCall = 4;

// A CPU backend whose loss (and loss gradient) turns NaN on one call of output_loss.
class PoisonedLossBackend : public dl::CpuBackend {
 public:
  explicit PoisonedLossBackend(int poisoned_call) : poisoned_call_(poisoned_call) {}
  void output_loss(const dl::OutputLoss& op, int n, int k, const float* z,
                   const std::int32_t* labels, float* out, float* dz, float grad_scale,
                   float* loss_sum) override {
    CpuBackend::output_loss(op, n, k, z, labels, out, dz, grad_scale, loss_sum);
    if (++calls_ != poisoned_call_) return;
    loss_sum[0] = std::nanf("");
    dz[0] = std::nanf("");
  }

 private:
  int poisoned_call_;
  int calls_ = 0;
};
}  // namespace

TEST_CASE("a non-finite loss stops the run naming its iteration, with or without loss scaling",
          "[loss_scaling]") {
  const dl::Dataset data = random_dataset(32 * 2 * 10, 55);
  struct Case {
    const char* parallel;
    bool dynamic;
    const char* what;
  };
  for (const Case& t :
       {Case{"{mode: averaging, workers: 2, averagingFrequency: 5}", false,
             "the training loss is not finite"},
        Case{"{mode: averaging, workers: 2, averagingFrequency: 5}", true,
             "the training loss is not finite"},
        Case{"{mode: synchronous, workers: 2}", true, "the training loss is not finite"},
        Case{"{mode: synchronous, workers: 2}", false, "the gradient is not finite"}}) {
    INFO(t.parallel << (t.dynamic ? ", dynamic scaling" : ", no scaling"));
    Config c = make_config(t.parallel, 32, "{type: sgd, learningRate: 0.1}");
    if (t.dynamic) c = with_loss_scaling(c, 1024.0);
    ParallelTrainer trainer(
        c, data,
        [](int w) -> std::unique_ptr<dl::Backend> {
          if (w == 1) return std::make_unique<PoisonedLossBackend>(kPoisonedCall);
          return std::make_unique<dl::CpuBackend>();
        },
        collective_for(2), single_process());
    trainer.initialize(c.seed);
    std::int64_t iteration = 0;
    int sync_points = 0;
    try {
      trainer.run_epoch(0, 0, iteration, [&](const dl::SyncPoint&) {
        ++sync_points;
        return dl::SyncAction::kContinue;
      });
      FAIL("a NaN loss did not stop the run");
    } catch (const dl::Error& e) {
      CHECK(e.code() == dl::ExitCode::kDiverged);
      const std::string message = e.what();
      // Counted from 1, as scores.csv counts: the three rounds before it are iterations 1 to 3.
      CHECK(message.find("epoch 1, iteration 4: " + std::string(t.what)) != std::string::npos);
    }
    // The bad round never reaches a sync point's callback (nothing is reported or saved).
    CHECK(sync_points == (c.parallel.mode == dl::ParallelMode::kSynchronous ? 3 : 0));
    // A NaN loss is not an overflow: the scale did not back off for it.
    CHECK(trainer.loss_scaler(0).skipped_steps() == 0);
  }
}
