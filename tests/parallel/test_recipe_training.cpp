// The Keras-port recipe through the data-parallel trainer: a 3-channel (NCHW) network trained with
// AdamW, a cosine schedule with warm-up and per-layer gradient clipping. Device-resident batches
// equal host-loaded ones bit for bit, and a run stopped mid-epoch and resumed in a new trainer from
// what a checkpoint keeps (parameters and updater state: the recipe adds no other state) equals an
// unbroken run bit for bit.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/random.hpp"
#include "data/dataset.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel_test_support.hpp"

namespace {

using dl::Config;
using dl::ParallelTrainer;
using dl::testing::collective_for;
using dl::testing::parameters_of;
using dl::testing::single_process;

constexpr int kChannels = 3, kSide = 8, kClasses = 4;
constexpr int kBatch = 8;

// Random colour images: every channel plane different.
dl::Dataset colour_dataset(std::int64_t n, std::uint64_t seed) {
  constexpr std::uint64_t kByteValues = 256;
  dl::RandomStream rng(seed, 0);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(n) * kChannels * kSide * kSide);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.below(kByteValues));
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(kClasses));
  return dl::Dataset(kChannels, kSide, kSide, std::move(pixels), std::move(labels), kClasses);
}

Config make_config(const std::string& parallel, const std::string& resident) {
  return dl::load_config_string(
      "seed: 9\nbatchSize: " + std::to_string(kBatch) +
          "\nepochs: 2\nweightInit: XAVIER_UNIFORM\n"
          "updater: {type: adamw, learningRate: 0.01, weightDecay: 0.05, epsilon: 1.0e-7}\n"
          "learningRateSchedule: {type: cosine, warmupIterations: 3, minLearningRate: 0.001}\n"
          "gradientNormalization: ClipL2PerLayer\ngradientNormalizationThreshold: 0.5\n"
          "inputType: {convolutionalFlat: {height: 8, width: 8, channels: 3}}\n"
          "layers:\n"
          "  - convolution: {nOut: 4, kernelSize: 3, convolutionMode: Same, activation: relu}\n"
          "  - subsampling: {kernelSize: 2, stride: 2}\n"
          "  - dense: {nOut: 8, activation: relu}\n"
          "  - output: {nOut: 4}\n"
          "data: {numClasses: 4, deviceResident: " +
          resident + "}\nparallel: " + parallel + "\n",
      "recipe-test.yaml");
}

std::unique_ptr<ParallelTrainer> make_trainer(const Config& c, const dl::Dataset& data) {
  return std::make_unique<ParallelTrainer>(
      c, data, [](int) { return std::make_unique<dl::CpuBackend>(); },
      collective_for(c.parallel.workers), single_process());
}

dl::SyncAction keep_going(const dl::SyncPoint&) {
  return dl::SyncAction::kContinue;
}

std::vector<float> train_straight(const Config& c, const dl::Dataset& data) {
  auto trainer = make_trainer(c, data);
  trainer->initialize(c.seed);
  std::int64_t iteration = 0;
  for (int e = 0; e < c.epochs; ++e) trainer->run_epoch(e, 0, iteration, keep_going);
  return parameters_of(*trainer);
}

}  // namespace

TEST_CASE("3-channel recipe: resident batches equal host batches; the run trains",
          "[parallel][recipe]") {
  const dl::Dataset data = colour_dataset(5 * 2 * kBatch + 3, 81);
  const std::string parallel = "{mode: synchronous, workers: 2}";
  const Config host = make_config(parallel, "never");
  const Config resident = make_config(parallel, "always");
  const std::vector<float> on_host = train_straight(host, data);
  CHECK(train_straight(resident, data) == on_host);
  auto fresh = make_trainer(host, data);
  fresh->initialize(host.seed);
  CHECK(parameters_of(*fresh) != on_host);
  // The schedule ran over the whole run: 6 rounds per epoch x 2 epochs.
  CHECK(fresh->optimizer(0).schedule().totalIterations == 12);
}

TEST_CASE("3-channel recipe: stopped mid-epoch and resumed, bit-identical to an unbroken run",
          "[parallel][recipe]") {
  const dl::Dataset data = colour_dataset(7 * kBatch + 5, 83);
  const Config c = make_config("{mode: averaging, workers: 2, averagingFrequency: 2}", "never");
  const std::vector<float> straight = train_straight(c, data);

  auto first = make_trainer(c, data);
  first->initialize(c.seed);
  std::int64_t iteration = 0;
  const std::int64_t next = first->run_epoch(0, 0, iteration, [](const dl::SyncPoint& p) {
    return p.round == 1 ? dl::SyncAction::kStop : dl::SyncAction::kContinue;
  });
  REQUIRE(next == 2);
  const dl::testing::SavedTrainer saved = dl::testing::save_trainer(*first);
  first.reset();

  auto resumed = make_trainer(c, data);
  dl::testing::restore_trainer(*resumed, saved);
  resumed->run_epoch(0, next, iteration, keep_going);
  resumed->run_epoch(1, 0, iteration, keep_going);
  CHECK(parameters_of(*resumed) == straight);
}
