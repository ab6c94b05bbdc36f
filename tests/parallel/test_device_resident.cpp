// data.deviceResident: a training set resident in the workers' backends trains to exactly the
// parameters of the host loader, with one or two workers, a short last round, averaging, a stop
// and resume in the middle of an epoch, and the input pipeline (normalization, crops, flips).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/random.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "parallel_test_support.hpp"

namespace {

using Catch::Matchers::Contains;
using dl::Config;
using dl::ParallelTrainer;

using dl::testing::collective_for;
using dl::testing::parameters_of;
using dl::testing::single_process;

constexpr int kRows = 6, kCols = 6, kClasses = 3;

dl::Dataset random_dataset(std::int64_t n, std::uint64_t seed) {
  return dl::testing::random_dataset(n, seed, {kRows, kCols, kClasses});
}

// A small network with dropout (whose masks depend on the iteration, so a batch landing in the
// wrong round would show) and a momentum updater (whose state the averaging carries).
Config make_config(const std::string& parallel, int batch, const std::string& resident,
                   const std::string& pipeline = "") {
  return dl::load_config_string(
      "seed: 5\nbatchSize: " + std::to_string(batch) +
          "\n"
          "updater: {type: nesterovs, learningRate: 0.05}\n"
          "inputType: {convolutionalFlat: {height: 6, width: 6, channels: 1}}\n"
          "layers:\n"
          "  - convolution: {kernelSize: [3, 3], nOut: 3, activation: relu}\n"
          "  - dense: {nOut: 8, activation: tanh}\n"
          "  - dropout: {dropOut: 0.8}\n"
          "  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}\n"
          "data: {deviceResident: " +
          resident + pipeline + "}\nparallel: " + parallel + "\n",
      "resident-test.yaml");
}

// `c` must outlive the trainer, which keeps a reference to it.
std::unique_ptr<ParallelTrainer> make_trainer(const Config& c, const dl::Dataset& data) {
  return std::make_unique<ParallelTrainer>(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); },
      collective_for(c.parallel.workers), single_process());
}

dl::SyncAction keep_going(const dl::SyncPoint&) {
  return dl::SyncAction::kContinue;
}

// Parameters of every worker after `epochs` epochs, and the sample counts every sync point saw.
struct Trained {
  std::vector<std::vector<float>> parameters;
  std::vector<std::int64_t> samples_seen;
};

Trained train(const Config& c, const dl::Dataset& data, int epochs, bool expect_resident) {
  auto trainer = make_trainer(c, data);
  CHECK(trainer->data_resident() == expect_resident);
  trainer->initialize(c.seed);
  Trained out;
  std::int64_t iteration = 0;
  for (int e = 0; e < epochs; ++e) {
    trainer->run_epoch(e, 0, iteration, [&](const dl::SyncPoint& p) {
      out.samples_seen.insert(out.samples_seen.end(), p.samples.begin(), p.samples.end());
      return dl::SyncAction::kContinue;
    });
  }
  for (int w = 0; w < trainer->workers(); ++w) out.parameters.push_back(parameters_of(*trainer, w));
  return out;
}

void check_same_training(const std::string& parallel, int batch, std::int64_t samples, int epochs) {
  const dl::Dataset data = random_dataset(samples, 71);
  const Trained host = train(make_config(parallel, batch, "never"), data, epochs, false);
  const Trained resident = train(make_config(parallel, batch, "always"), data, epochs, true);
  CHECK(resident.samples_seen == host.samples_seen);
  REQUIRE(resident.parameters.size() == host.parameters.size());
  for (std::size_t w = 0; w < host.parameters.size(); ++w) {
    INFO("worker " << w);
    CHECK(resident.parameters[w] == host.parameters[w]);
  }
  // The run trained at all: the parameters moved from their initial values.
  const Config c = make_config(parallel, batch, "never");
  auto fresh = make_trainer(c, data);
  fresh->initialize(c.seed);
  CHECK(parameters_of(*fresh) != host.parameters.front());
}

}  // namespace

TEST_CASE("resident data, 1 worker: bit-identical to the host loader, short last round",
          "[parallel][resident]") {
  // 97 = 9 x 10 + 7: the tenth round has 7 samples.
  check_same_training("{workers: 1, prefetchBuffer: 2}", 10, 97, 2);
}

TEST_CASE("resident data, 2 workers averaging every 3 rounds: bit-identical to the host loader",
          "[parallel][resident]") {
  // Rounds of 16: 7 full rounds, then 5 samples, all worker 0's; worker 1 gets none.
  check_same_training("{mode: averaging, workers: 2, averagingFrequency: 3, prefetchBuffer: 1}", 8,
                      7 * 16 + 5, 2);
  // A last round that both workers share unevenly (8 + 3).
  check_same_training("{mode: averaging, workers: 2, averagingFrequency: 3, prefetchBuffer: 0}", 8,
                      5 * 16 + 11, 1);
}

TEST_CASE("resident data, 2 workers synchronous: bit-identical to the host loader",
          "[parallel][resident]") {
  check_same_training("{mode: synchronous, workers: 2}", 8, 6 * 16 + 9, 1);
}

TEST_CASE("resident data: a stop mid-epoch resumed in a new trainer equals an unbroken host run",
          "[parallel][resident]") {
  const std::string parallel = "{mode: averaging, workers: 2, averagingFrequency: 3}";
  const dl::Dataset data = random_dataset(9 * 16 + 6, 73);
  const Config host_config = make_config(parallel, 8, "never");
  const Config resident_config = make_config(parallel, 8, "always");
  const Trained straight = train(host_config, data, 2, false);

  auto first = make_trainer(resident_config, data);
  first->initialize(resident_config.seed);
  std::int64_t iteration = 0;
  const std::int64_t next = first->run_epoch(0, 0, iteration, [](const dl::SyncPoint& p) {
    return p.round == 5 ? dl::SyncAction::kStop : dl::SyncAction::kContinue;
  });
  REQUIRE(next == 6);
  // What a checkpoint keeps: the averaged parameters and each worker's updater state.
  const dl::testing::SavedTrainer saved = dl::testing::save_trainer(*first);
  first.reset();

  auto resumed = make_trainer(resident_config, data);
  dl::testing::restore_trainer(*resumed, saved);
  resumed->run_epoch(0, next, iteration, keep_going);
  resumed->run_epoch(1, 0, iteration, keep_going);
  CHECK(iteration == 2 * 10);
  for (int w = 0; w < 2; ++w) CHECK(parameters_of(*resumed, w) == straight.parameters[w]);
}

TEST_CASE("deviceResident auto keeps the data on the host for the CPU backend and says why",
          "[parallel][resident]") {
  const dl::Dataset data = random_dataset(20, 75);
  // The trainer keeps a reference to its config: each must outlive its trainer.
  const Config automatic_config = make_config("{workers: 1}", 4, "auto");
  auto automatic = make_trainer(automatic_config, data);
  CHECK_FALSE(automatic->data_resident());
  CHECK_THAT(automatic->data_placement(), Contains("host loader"));
  CHECK_THAT(automatic->data_placement(), Contains("CPU backend"));

  const Config always_config = make_config("{workers: 2}", 4, "always");
  auto always = make_trainer(always_config, data);
  CHECK(always->data_resident());
  // 20 images of 36 bytes and 20 int32 labels, per worker.
  const std::size_t bytes = 20 * kRows * kCols + 20 * sizeof(std::int32_t);
  CHECK_THAT(always->data_placement(), Contains(std::to_string(bytes) + " bytes"));
  CHECK_THAT(always->data_placement(), Contains(std::to_string(2 * bytes) + " in all"));
}

TEST_CASE("resident data with normalization, crops and flips: bit-identical to the host loader",
          "[parallel][resident]") {
  const std::string parallel = "{mode: averaging, workers: 2, averagingFrequency: 2}";
  const std::string pipeline = ", normalize: true, randomCrop: 2, horizontalFlip: true";
  dl::Dataset data = random_dataset(5 * 16 + 3, 77);
  const Config host_config = make_config(parallel, 8, "never", pipeline);
  const Config resident_config = make_config(parallel, 8, "always", pipeline);
  data.set_pipeline(dl::input_pipeline(host_config.data, host_config.seed, data));
  REQUIRE(data.pipeline().augments());
  REQUIRE(data.pipeline().normalizes());
  const Trained host = train(host_config, data, 2, false);
  const Trained resident = train(resident_config, data, 2, true);
  for (int w = 0; w < 2; ++w) CHECK(resident.parameters[w] == host.parameters[w]);

  // The pipeline changes the training: without it the parameters differ.
  dl::Dataset plain = random_dataset(5 * 16 + 3, 77);
  const Trained untransformed = train(make_config(parallel, 8, "always"), plain, 2, true);
  CHECK(untransformed.parameters.front() != host.parameters.front());

  // Stopped in epoch 1 and resumed on the resident path: the straight host run's parameters.
  auto first = make_trainer(resident_config, data);
  first->initialize(resident_config.seed);
  std::int64_t iteration = 0;
  first->run_epoch(0, 0, iteration, keep_going);
  const std::int64_t next = first->run_epoch(1, 0, iteration, [](const dl::SyncPoint& p) {
    return p.round == 1 ? dl::SyncAction::kStop : dl::SyncAction::kContinue;
  });
  const dl::testing::SavedTrainer saved = dl::testing::save_trainer(*first);
  first.reset();
  auto resumed = make_trainer(resident_config, data);
  dl::testing::restore_trainer(*resumed, saved);
  resumed->run_epoch(1, next, iteration, keep_going);
  for (int w = 0; w < 2; ++w) CHECK(parameters_of(*resumed, w) == host.parameters[w]);
}
