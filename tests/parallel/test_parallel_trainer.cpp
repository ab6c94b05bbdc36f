// Data-parallel semantics: the thread collective, synchronous == large-batch, averaging with
// frequency 1 == synchronous for plain SGD, determinism, and a failing worker that stops all.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "data/dataset.hpp"
#include "data/epoch_plan.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "parallel/thread_collective.hpp"
#include "parallel_test_support.hpp"

namespace {

using dl::Config;
using dl::ParallelTrainer;

constexpr int kRows = 8, kCols = 8, kClasses = 4;

dl::Dataset random_dataset(std::int64_t n, std::uint64_t seed) {
  return dl::testing::random_dataset(n, seed, {kRows, kCols, kClasses});
}

Config make_config(const std::string& parallel, int batch, const std::string& updater) {
  return dl::load_config_string(R"(
seed: 3
batchSize: )" + std::to_string(batch) +
                                    R"(
updater: )" + updater + R"(
inputType: {convolutionalFlat: {height: 8, width: 8, channels: 1}}
layers:
  - convolution: {kernelSize: [3, 3], nOut: 4, activation: relu}
  - subsampling: {kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 16, activation: tanh}
  - output: {nOut: 4, activation: softmax, lossFunction: negativeloglikelihood}
parallel: )" + parallel + "\n",
                                "parallel-test.yaml");
}

using dl::testing::collective_for;
using dl::testing::parameters_of;
using dl::testing::single_process;

std::vector<float> train_parameters(const Config& config, const dl::Dataset& data, int epochs = 1) {
  ParallelTrainer trainer(
      config, data, [](int) { return std::make_unique<dl::CpuBackend>(); },
      collective_for(config.parallel.workers), single_process());
  trainer.initialize(config.seed);
  std::int64_t iteration = 0;
  for (int e = 0; e < epochs; ++e) {
    trainer.run_epoch(e, 0, iteration,
                      [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; });
  }
  const std::vector<float> params = parameters_of(trainer);
  // Every replica ends an epoch identical to replica 0.
  for (int w = 1; w < trainer.workers(); ++w) CHECK(parameters_of(trainer, w) == params);
  return params;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(double(a[i])));
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
  }
  return diff / scale;
}

}  // namespace

TEST_CASE("thread collective: all-reduce sums in rank order and every rank gets the same bits") {
  constexpr int kRanks = 3;
  constexpr std::size_t kN = 1001;  // not a multiple of the ranks: uneven slices
  dl::ThreadCollective collective(kRanks);
  std::vector<std::vector<float>> buffers(kRanks, std::vector<float>(kN));
  for (int r = 0; r < kRanks; ++r) {
    for (std::size_t i = 0; i < kN; ++i) buffers[r][i] = 0.1f * float(r + 1) + float(i) * 1e-3f;
  }
  std::vector<float> expected(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    expected[i] = (buffers[0][i] + buffers[1][i]) + buffers[2][i];
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] { collective.all_reduce_sum(r, buffers[r].data(), kN); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) CHECK(buffers[r] == expected);
}

TEST_CASE("thread collective: broadcast copies the root's buffer") {
  dl::ThreadCollective collective(2);
  std::vector<float> a{1, 2, 3}, b{0, 0, 0};
  std::thread t([&] { collective.broadcast(1, b.data(), 3, 0); });
  collective.broadcast(0, a.data(), 3, 0);
  t.join();
  CHECK(b == a);
}

TEST_CASE("thread collective: abort wakes a participant blocked in a barrier") {
  dl::ThreadCollective collective(2);
  std::atomic<bool> threw{false};
  std::thread t([&] {
    try {
      collective.barrier(1);
    } catch (const dl::CollectiveAborted&) {
      threw = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  collective.abort();
  t.join();
  CHECK(threw);
  CHECK_THROWS_AS(collective.barrier(0), dl::CollectiveAborted);
}

TEST_CASE("synchronous: 2 workers x batch 64 equal 1 worker x batch 128 after 20 steps (SGD)") {
  const dl::Dataset data = random_dataset(128 * 20, 42);
  const auto one =
      train_parameters(make_config("{mode: synchronous, workers: 1, prefetchBuffer: 0}", 128,
                                   "{type: sgd, learningRate: 0.1}"),
                       data);
  const auto two =
      train_parameters(make_config("{mode: synchronous, workers: 2, prefetchBuffer: 2}", 64,
                                   "{type: sgd, learningRate: 0.1}"),
                       data);
  const auto initial = [&] {
    Config c = make_config("{workers: 1}", 128, "sgd");
    dl::CpuBackend backend;
    dl::Model m(c, backend, 1);
    m.initialize(c.seed);
    return std::vector<float>(m.parameters(), m.parameters() + m.parameter_count());
  }();
  CHECK(max_relative_difference(one, initial) > 1e-3);  // training moved the parameters
  CHECK(max_relative_difference(one, two) <= 1e-5);
}

TEST_CASE("averaging with frequency 1 equals synchronous mode for plain SGD") {
  const dl::Dataset data = random_dataset(64 * 2 * 10, 43);
  const auto sync = train_parameters(
      make_config("{mode: synchronous, workers: 2}", 64, "{type: sgd, learningRate: 0.1}"), data);
  const auto avg =
      train_parameters(make_config("{mode: averaging, workers: 2, averagingFrequency: 1}", 64,
                                   "{type: sgd, learningRate: 0.1}"),
                       data);
  CHECK(max_relative_difference(sync, avg) <= 1e-5);
}

TEST_CASE("the same config and seed train to bit-identical parameters (2 workers, averaging 3)") {
  // 700 samples, 2 x 64: 6 rounds, the last one short; averaging at rounds 3 and 6.
  const dl::Dataset data = random_dataset(700, 44);
  const Config c =
      make_config("{mode: averaging, workers: 2, averagingFrequency: 3, prefetchBuffer: 3}", 64,
                  "{type: nesterovs, learningRate: 0.05, momentum: 0.9}");
  CHECK(train_parameters(c, data, 2) == train_parameters(c, data, 2));
}

TEST_CASE("averaging weights replicas by the samples they saw") {
  // One round, 2 workers x batch 4, but only 5 samples: worker 0 sees 4, worker 1 sees 1.
  // The average must be (4 * p0 + 1 * p1) / 5: check against two separately trained replicas.
  const dl::Dataset data = random_dataset(5, 45);
  const Config two =
      make_config("{mode: averaging, workers: 2, averagingFrequency: 5, prefetchBuffer: 0}", 4,
                  "{type: sgd, learningRate: 0.5}");
  const std::vector<float> averaged = train_parameters(two, dl::Dataset(data), 1);

  // Worker w's own step, computed with a one-worker trainer on exactly its samples in the same
  // order the epoch plan gives it.
  dl::EpochPlan plan(5, 4, 2, two.seed, 0, two.data.shuffle);
  auto replica_after_own_batch = [&](int w) {
    const auto slice = plan.batch(0, w);
    std::vector<std::uint8_t> pixels;
    std::vector<std::int32_t> labels;
    std::vector<float> image(kRows * kCols);
    for (std::size_t i = 0; i < slice.count; ++i) {
      std::int32_t label;
      data.gather(&slice.indices[i], 1, image.data(), &label);
      for (float v : image) pixels.push_back(static_cast<std::uint8_t>(std::lround(v * 255.0f)));
      labels.push_back(label);
    }
    const dl::Dataset own(kRows, kCols, std::move(pixels), std::move(labels), kClasses);
    Config one = two;
    one.parallel.workers = 1;
    one.data.shuffle = false;
    one.batchSize = static_cast<int>(slice.count);
    return train_parameters(one, own, 1);
  };
  const auto p0 = replica_after_own_batch(0);
  const auto p1 = replica_after_own_batch(1);
  std::vector<float> expected(p0.size());
  for (std::size_t i = 0; i < p0.size(); ++i) expected[i] = 0.8f * p0[i] + 0.2f * p1[i];
  CHECK(max_relative_difference(averaged, expected) <= 1e-5);
}

namespace {
// A CPU backend whose dense layer fails after a few calls: a worker that dies mid-epoch.
class FailingBackend : public dl::CpuBackend {
 public:
  void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                     float* y) override {
    if (++calls_ > kCallsBeforeFailure) throw std::runtime_error("injected failure");
    CpuBackend::dense_forward(n, in, out, x, w, b, y);
  }

 private:
  static constexpr int kCallsBeforeFailure = 7;
  int calls_ = 0;
};
}  // namespace

TEST_CASE("a worker that throws stops every worker and is named; nothing hangs") {
  const dl::Dataset data = random_dataset(64 * 2 * 20, 46);
  for (const char* mode : {"synchronous", "averaging"}) {
    const Config c =
        make_config(std::string("{mode: ") + mode + ", workers: 2, prefetchBuffer: 2}", 64, "sgd");
    ParallelTrainer trainer(
        c, data,
        [](int w) -> std::unique_ptr<dl::Backend> {
          if (w == 1) return std::make_unique<FailingBackend>();
          return std::make_unique<dl::CpuBackend>();
        },
        collective_for(2), single_process());
    trainer.initialize(c.seed);
    std::int64_t iteration = 0;
    try {
      trainer.run_epoch(0, 0, iteration,
                        [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; });
      FAIL("run_epoch returned normally");
    } catch (const dl::Error& e) {
      INFO(mode << ": " << e.what());
      CHECK(std::string(e.what()).find("worker 1") != std::string::npos);
      CHECK(std::string(e.what()).find("injected failure") != std::string::npos);
    }
  }
}

namespace {
// Records the order in which the trainer destroys the collective and the backends.
class RecordedBackend : public dl::CpuBackend {
 public:
  explicit RecordedBackend(std::vector<std::string>& log) : log_(log) {}
  ~RecordedBackend() override { log_.push_back("backend"); }

 private:
  std::vector<std::string>& log_;
};
class RecordedCollective : public dl::Collective {
 public:
  RecordedCollective(int workers, std::vector<std::string>& log) : inner_(workers), log_(log) {}
  ~RecordedCollective() override { log_.push_back("collective"); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  void all_reduce_sum(int rank, float* data, std::size_t n) override {
    inner_.all_reduce_sum(rank, data, n);
  }
  void broadcast(int rank, float* data, std::size_t n, int root) override {
    inner_.broadcast(rank, data, n, root);
  }
  void barrier(int rank) override { inner_.barrier(rank); }
  void abort() override { inner_.abort(); }

 private:
  dl::ThreadCollective inner_;
  std::vector<std::string>& log_;
};
}  // namespace

TEST_CASE("the trainer destroys the collective before the backends") {
  // A GPU collective aborts NCCL when destroyed during unwinding; backends destroyed first would
  // wait on their streams behind NCCL kernels that never end.
  const dl::Dataset data = random_dataset(64 * 2, 49);
  const Config c = make_config("{mode: synchronous, workers: 2}", 64, "sgd");
  std::vector<std::string> log;
  {
    ParallelTrainer trainer(
        c, data, [&](int) { return std::make_unique<RecordedBackend>(log); },
        [&](const std::vector<dl::Backend*>& b) {
          return std::make_unique<RecordedCollective>(static_cast<int>(b.size()), log);
        },
        single_process());
  }
  CHECK(log == std::vector<std::string>{"collective", "backend", "backend"});
}

TEST_CASE("the callback can stop an epoch at a sync point and the epoch resumes from there") {
  const dl::Dataset data = random_dataset(64 * 2 * 9, 47);
  const Config c = make_config("{mode: averaging, workers: 2, averagingFrequency: 3}", 64,
                               "{type: nesterovs, learningRate: 0.05}");
  const auto straight = train_parameters(c, data);

  ParallelTrainer trainer(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); }, collective_for(2),
      single_process());
  trainer.initialize(c.seed);
  std::int64_t iteration = 0;
  const std::int64_t next = trainer.run_epoch(0, 0, iteration, [](const dl::SyncPoint& p) {
    return p.round == 2 ? dl::SyncAction::kStop : dl::SyncAction::kContinue;
  });
  CHECK(next == 3);
  CHECK(iteration == 3);
  trainer.run_epoch(0, next, iteration,
                    [](const dl::SyncPoint&) { return dl::SyncAction::kContinue; });
  CHECK(iteration == 9);
  CHECK(parameters_of(trainer) == straight);
}

TEST_CASE("linear learning-rate scaling ramps from lr to workers x lr over the warm-up") {
  const dl::Dataset data = random_dataset(256, 48);
  Config c = make_config(
      "{mode: synchronous, workers: 2, learningRateScaling: linear, warmupIterations: 4}", 64,
      "{type: sgd, learningRate: 0.1}");
  ParallelTrainer trainer(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); }, collective_for(2),
      single_process());
  // Iteration i (0-based) uses lr * (1 + (workers - 1) * (i + 1) / warmup) until the warm-up ends.
  CHECK(trainer.learning_rate(0) == Approx(0.1 * 1.25));
  CHECK(trainer.learning_rate(1) == Approx(0.1 * 1.5));
  CHECK(trainer.learning_rate(3) == Approx(0.1 * 2.0));
  CHECK(trainer.learning_rate(100) == Approx(0.1 * 2.0));

  c.parallel.learningRateScaling = dl::LearningRateScaling::kNone;
  ParallelTrainer unscaled(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); }, collective_for(2),
      single_process());
  CHECK(unscaled.learning_rate(0) == Approx(0.1));
  CHECK(unscaled.learning_rate(100) == Approx(0.1));
}

// ---- loss scaling ------------------------------------------------------------------------

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
  void output_loss(dl::LossFunction loss, dl::Activation act, int n, int k, const float* z,
                   const std::int32_t* labels, float* out, float* dz, float grad_scale,
                   float* loss_sum) override {
    CpuBackend::output_loss(loss, act, n, k, z, labels, out, dz, grad_scale, loss_sum);
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
  void output_loss(dl::LossFunction loss, dl::Activation act, int n, int k, const float* z,
                   const std::int32_t* labels, float* out, float* dz, float grad_scale,
                   float* loss_sum) override {
    CpuBackend::output_loss(loss, act, n, k, z, labels, out, dz, grad_scale, loss_sum);
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
      CHECK(message.find("epoch 0, iteration 3: " + std::string(t.what)) != std::string::npos);
    }
    // The bad round never reaches a sync point's callback (nothing is reported or saved).
    CHECK(sync_points == (c.parallel.mode == dl::ParallelMode::kSynchronous ? 3 : 0));
    // A NaN loss is not an overflow: the scale did not back off for it.
    CHECK(trainer.loss_scaler(0).skipped_steps() == 0);
  }
}
