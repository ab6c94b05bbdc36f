// A CPU worker's batches (converted straight into the model's input, no loader thread) are the
// BatchLoader's, bit for bit and round by round: plain and through the input pipeline, for each
// worker of two, from the first round and from one in the middle (a resumed epoch).
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "data/batch_loader.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "nn/model.hpp"
#include "parallel/batch_source.hpp"
#include "parallel_test_support.hpp"

namespace {

constexpr int kBatch = 40;
constexpr int kWorkers = 2;
constexpr std::int64_t kSamples = 5 * kBatch * kWorkers + 3;  // a short last round

dl::Config make_config(const std::string& pipeline) {
  return dl::load_config_string(
      "seed: 9\nbatchSize: " + std::to_string(kBatch) +
          "\ninputType: {convolutionalFlat: {height: 6, width: 6, channels: 1}}\n"
          "layers:\n"
          "  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}\n"
          "data: {deviceResident: never" +
          pipeline + "}\n",
      "batch-source-test.yaml");
}

// The backend's gather cuts a batch into tasks of 16 samples: batch 40 makes 3, on 1 or 3 threads.
void check_same_batches(const dl::Config& config, const dl::Dataset& data, int threads) {
  const int threads_before = dl::cpu_threads();
  dl::set_cpu_threads(threads);
  dl::CpuBackend backend;
  dl::Model model(config, backend, kBatch);
  constexpr int kEpoch = 1;
  const auto plan = std::make_shared<const dl::EpochPlan>(data.size(), kBatch, kWorkers,
                                                          config.seed, kEpoch, true);
  const std::size_t floats = data.sample_floats();
  for (int worker = 0; worker < kWorkers; ++worker) {
    for (const std::int64_t first_round : {std::int64_t{0}, std::int64_t{2}}) {
      INFO("worker " << worker << ", first round " << first_round);
      const auto source = dl::make_batch_source(data, plan, worker, first_round,
                                                config.parallel.prefetchBuffer, model, nullptr);
      dl::BatchLoader loader(data, plan, worker, first_round, 2);
      for (std::int64_t round = first_round; round < plan->rounds(); ++round) {
        INFO("round " << round);
        const dl::HostBatch* expected = loader.next();
        REQUIRE(expected != nullptr);
        const int n = source->next(round);
        REQUIRE(n == static_cast<int>(expected->count));
        CHECK(std::memcmp(model.input(), expected->images.data(), n * floats * sizeof(float)) == 0);
        CHECK(std::memcmp(model.labels(), expected->labels.data(), n * sizeof(std::int32_t)) == 0);
      }
      CHECK(loader.next() == nullptr);
    }
  }
  dl::set_cpu_threads(threads_before);
}

}  // namespace

TEST_CASE("a CPU worker's batches are the loader's, bit for bit", "[parallel][batch_source]") {
  const dl::Dataset data = dl::testing::random_dataset(kSamples, 13, {6, 6, 3});
  check_same_batches(make_config(""), data, GENERATE(1, 3));
}

TEST_CASE("a CPU worker's batches through the input pipeline are the loader's",
          "[parallel][batch_source]") {
  const dl::Config config = make_config(", normalize: true, randomCrop: 2, horizontalFlip: true");
  dl::Dataset data = dl::testing::random_dataset(kSamples, 17, {6, 6, 3});
  data.set_pipeline(dl::input_pipeline(config.data, config.seed, data));
  REQUIRE(data.pipeline().augments());
  check_same_batches(config, data, GENERATE(1, 3));
}

// The rule a run's start-up check of threads shares with make_batch_source: a loader thread only
// where batches come through a loader.
TEST_CASE("a worker's batch source names the threads it will start", "[parallel][batch_source]") {
  const dl::Dataset pixels = dl::testing::random_dataset(kSamples, 13, {6, 6, 3});
  const dl::Dataset rows = dl::Dataset::from_features(4, std::vector<float>(4 * kSamples, 0.5f),
                                                      std::vector<std::int32_t>(kSamples, 1), 3);
  CHECK_FALSE(dl::uses_batch_loader(pixels, dl::BackendKind::kCpu));
  CHECK(dl::batch_source_threads(pixels, dl::BackendKind::kCpu, false, 2, kBatch, 1).empty());
  CHECK(dl::uses_batch_loader(pixels, dl::BackendKind::kCuda));
  CHECK(dl::batch_source_threads(pixels, dl::BackendKind::kCuda, false, 2, kBatch, 1) ==
        std::vector<std::string>{"worker 1's batch prefetch thread"});
  CHECK(dl::batch_source_threads(pixels, dl::BackendKind::kCuda, true, 2, kBatch, 1).empty());
  CHECK(dl::uses_batch_loader(rows, dl::BackendKind::kCpu));
  CHECK(dl::batch_source_threads(rows, dl::BackendKind::kCpu, false, 2, kBatch, 0) ==
        std::vector<std::string>{"worker 0's batch prefetch thread"});
  CHECK(dl::batch_source_threads(rows, dl::BackendKind::kCpu, false, 0, kBatch, 0).empty());
}
