// What the trainer tests share (test_parallel_trainer.cpp, test_loss_scaling.cpp): a small
// convolutional network's config, random data for it, and a whole run's final parameters.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "data/dataset.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel_test_support.hpp"

namespace dl::testing::trainer {

using dl::Config;
using dl::ParallelTrainer;
using dl::testing::collective_for;
using dl::testing::parameters_of;
using dl::testing::single_process;

inline constexpr int kRows = 8, kCols = 8, kClasses = 4;

inline dl::Dataset random_dataset(std::int64_t n, std::uint64_t seed) {
  return dl::testing::random_dataset(n, seed, {kRows, kCols, kClasses});
}

inline Config make_config(const std::string& parallel, int batch, const std::string& updater) {
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

inline std::vector<float> train_parameters(const Config& config, const dl::Dataset& data,
                                           int epochs = 1) {
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

inline double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double scale = 0, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(double(a[i])));
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
  }
  return diff / scale;
}

}  // namespace dl::testing::trainer
