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
#include "trainer_fixture.hpp"

using namespace dl::testing::trainer;  // the shared network, data and run helper

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
