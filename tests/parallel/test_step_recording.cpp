// The step recorder's policy (first run as is, second recorded, then replayed; a failed recording
// turns recording off) against a CPU backend that pretends to record, and a single worker's sync
// points, which follow the listeners' iterations instead of every round.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "parallel/step_recorder.hpp"
#include "parallel_test_support.hpp"

namespace {

using dl::recorded_step_key;
using dl::RecordedStepKey;

// Records by noting that it is recording; a replay counts itself. end_recording fails on demand.
class PretendRecordingBackend final : public dl::CpuBackend {
 public:
  struct Work final : dl::RecordedWork {
    explicit Work(int* replays) : replays(replays) {}
    void replay() override { ++*replays; }
    int* replays;
  };
  bool begin_recording() override {
    recording = true;
    return true;
  }
  std::unique_ptr<dl::RecordedWork> end_recording() override {
    recording = false;
    if (fail_next_end) return nullptr;
    return std::make_unique<Work>(&replays);
  }
  bool recording = false;
  bool fail_next_end = false;
  int replays = 0;
};

}  // namespace

TEST_CASE("a step part runs as is first, is recorded the second time, then only replayed") {
  PretendRecordingBackend backend;
  dl::StepRecorder recorder(backend, true);
  int runs = 0, recorded_runs = 0;
  auto part = [&] {
    ++runs;
    if (backend.recording) ++recorded_runs;
  };
  const RecordedStepKey full = recorded_step_key(128, 1.0f / 128);
  recorder.run(full, part);
  CHECK((runs == 1 && recorded_runs == 0 && backend.replays == 0));
  recorder.run(full, part);  // recorded (nothing ran), then replayed
  CHECK((runs == 2 && recorded_runs == 1 && backend.replays == 1));
  for (int i = 0; i < 5; ++i) recorder.run(full, part);
  CHECK((runs == 2 && backend.replays == 6 && recorder.replays() == 6));

  // An epoch's short last batch is another key: as is, then recorded; the full one stays.
  const RecordedStepKey short_batch = recorded_step_key(96, 1.0f / 96);
  recorder.run(short_batch, part);
  CHECK((runs == 3 && backend.replays == 6));
  recorder.run(short_batch, part);
  CHECK((runs == 4 && recorded_runs == 2 && backend.replays == 7));
  recorder.run(full, part);
  CHECK((runs == 4 && backend.replays == 8));
  // A gradient scale that differs in one bit is another key.
  recorder.run(recorded_step_key(128, std::nextafter(1.0f / 128, 1.0f)), part);
  CHECK(runs == 5);
}

TEST_CASE("keys that alternate are never recorded; a recorder not wanted never records") {
  PretendRecordingBackend backend;
  dl::StepRecorder recorder(backend, true);
  int runs = 0;
  for (int i = 0; i < 6; ++i)
    recorder.run(recorded_step_key(i % 2 == 0 ? 8 : 4, 1.0f), [&] { ++runs; });
  CHECK((runs == 6 && backend.replays == 0));

  dl::StepRecorder off(backend, false);
  for (int i = 0; i < 4; ++i) off.run(recorded_step_key(8, 1.0f), [&] { ++runs; });
  CHECK((runs == 10 && backend.replays == 0 && !off.recording()));

  dl::CpuBackend cpu;  // cannot record: every part runs as is
  dl::StepRecorder on_cpu(cpu, true);
  for (int i = 0; i < 4; ++i) on_cpu.run(recorded_step_key(8, 1.0f), [&] { ++runs; });
  CHECK((runs == 14 && !on_cpu.recording()));
}

TEST_CASE("a recording that fails or throws turns recording off and the part still runs") {
  for (bool throw_while_recording : {false, true}) {
    INFO("throws while recording: " << throw_while_recording);
    PretendRecordingBackend backend;
    backend.fail_next_end = !throw_while_recording;
    dl::StepRecorder recorder(backend, true);
    int runs = 0, completed = 0;
    auto part = [&] {
      ++runs;
      if (!backend.recording) {
        ++completed;  // ran for real (a recording runs nothing)
      } else if (throw_while_recording) {
        throw std::runtime_error("operation not permitted when stream is capturing");
      }
    };
    const RecordedStepKey key = recorded_step_key(16, 0.5f);
    recorder.run(key, part);
    recorder.run(key, part);  // the failed recording, then the part as is
    CHECK(!recorder.recording());
    CHECK(completed == 2);
    for (int i = 0; i < 3; ++i) recorder.run(key, part);
    CHECK((completed == 5 && backend.replays == 0 && !backend.recording));
  }
}

namespace {

std::vector<std::int64_t> sync_iterations(const dl::Config& c, const dl::Dataset& data) {
  dl::ParallelTrainer trainer(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); },
      dl::testing::collective_for(c.parallel.workers), dl::testing::single_process());
  trainer.initialize(c.seed);
  std::vector<std::int64_t> seen;
  std::int64_t iteration = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    trainer.run_epoch(epoch, 0, iteration, [&](const dl::SyncPoint& p) {
      seen.push_back(p.iteration);
      return dl::SyncAction::kContinue;
    });
  return seen;
}

}  // namespace

TEST_CASE("one worker meets the listeners at their iterations and at each epoch's end") {
  const dl::Dataset data = dl::testing::random_dataset(8 * 15 - 3, 60, {8, 8, 4});  // 15 rounds
  dl::Config c = dl::load_config_string(R"(
seed: 5
batchSize: 8
updater: {type: sgd, learningRate: 0.1}
inputType: {convolutionalFlat: {height: 8, width: 8, channels: 1}}
layers:
  - dense: {nOut: 6, activation: tanh}
  - output: {nOut: 4, activation: softmax, lossFunction: negativeloglikelihood}
output: {scoreEveryIterations: 4, checkpointEveryIterations: 6}
parallel: {workers: 1, averagingFrequency: 5}
)",
                                        "window.yaml");
  CHECK(sync_iterations(c, data) ==
        std::vector<std::int64_t>{4, 6, 8, 12, 15, 16, 18, 20, 24, 28, 30});
  c.earlyStopping.enabled = true;  // its iteration conditions judge every round
  CHECK(sync_iterations(c, data).size() == 30);
  c.earlyStopping.enabled = false;
  c.parallel.workers = 2;  // averaging: every averagingFrequency rounds and each epoch's end
  CHECK(sync_iterations(c, data) == std::vector<std::int64_t>{5, 8, 13, 16});
}
