// Helpers shared by the config tests: catching a ConfigError's message, a small valid config to
// start from, and a field-by-field comparison of two Configs.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "config/config.hpp"
#include "config/config_loader.hpp"
#include "core/error.hpp"

namespace dl::testing {

// The repository root, for the shipped configs (set by tests/config/meson.build).
inline std::string source_path(const std::string& relative) {
  return std::string(DL_SOURCE_DIR) + "/" + relative;
}

// The smallest valid network; tests prepend keys to it, so its lines start at the prefix's end.
inline const std::string kNetwork =
    "inputType:\n"
    "  convolutionalFlat: {height: 28, width: 28, channels: 1}\n"
    "layers:\n"
    "  - dense: {nOut: 16}\n"
    "  - output: {nOut: 10}\n";

inline constexpr const char* kSource = "t.yaml";

// The message of the ConfigError that loading `yaml` with `overrides` throws; fails the test when
// loading succeeds or throws anything else.
inline std::string load_error(const std::string& yaml,
                              const std::vector<std::string>& overrides = {}) {
  try {
    load_config_string(yaml, kSource, overrides);
  } catch (const ConfigError& e) {
    CHECK(e.code() == ExitCode::kConfigError);
    return e.what();
  } catch (const std::exception& e) {
    FAIL("expected a ConfigError, got: " << e.what());
  }
  FAIL("expected a ConfigError, but the config loaded:\n" << yaml);
  return {};
}

inline Config load(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return load_config_string(yaml, kSource, overrides);
}

// Every field of the two configs, except sourcePath and the layers' source locations.
inline void check_same_config(const Config& a, const Config& b) {
  CHECK(a.seed == b.seed);
  CHECK(a.backend == b.backend);
  CHECK(a.dtype == b.dtype);
  CHECK(a.weightInit == b.weightInit);
  CHECK(a.activation == b.activation);
  CHECK(a.updater.type == b.updater.type);
  CHECK(a.updater.learningRate == b.updater.learningRate);
  CHECK(a.updater.momentum == b.updater.momentum);
  CHECK(a.updater.beta1 == b.updater.beta1);
  CHECK(a.updater.beta2 == b.updater.beta2);
  CHECK(a.updater.epsilon == b.updater.epsilon);
  CHECK(a.updater.rmsDecay == b.updater.rmsDecay);
  CHECK(a.updater.weightDecay == b.updater.weightDecay);
  CHECK(a.updater.weightDecayBias == b.updater.weightDecayBias);
  CHECK(a.schedule.type == b.schedule.type);
  CHECK(a.schedule.gamma == b.schedule.gamma);
  CHECK(a.schedule.power == b.schedule.power);
  CHECK(a.schedule.step == b.schedule.step);
  CHECK(a.schedule.warmupIterations == b.schedule.warmupIterations);
  CHECK(a.schedule.totalIterations == b.schedule.totalIterations);
  CHECK(a.schedule.minLearningRate == b.schedule.minLearningRate);
  CHECK(a.schedule.divFactor == b.schedule.divFactor);
  CHECK(a.schedule.finalDivFactor == b.schedule.finalDivFactor);
  CHECK(a.l2 == b.l2);
  CHECK(a.l2Bias == b.l2Bias);
  CHECK(a.gradientNormalization == b.gradientNormalization);
  CHECK(a.gradientNormalizationThreshold == b.gradientNormalizationThreshold);
  CHECK(a.batchSize == b.batchSize);
  CHECK(a.epochs == b.epochs);
  CHECK(a.onNonFiniteLoss == b.onNonFiniteLoss);

  CHECK(a.inputType.kind == b.inputType.kind);
  CHECK(a.inputType.height == b.inputType.height);
  CHECK(a.inputType.width == b.inputType.width);
  CHECK(a.inputType.channels == b.inputType.channels);
  CHECK(a.inputType.size == b.inputType.size);

  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    INFO("layer " << i);
    const LayerConfig& x = a.layers[i];
    const LayerConfig& y = b.layers[i];
    CHECK(x.type == y.type);
    CHECK(x.name == y.name);
    REQUIRE(x.inputs.size() == y.inputs.size());
    for (std::size_t k = 0; k < x.inputs.size(); ++k) CHECK(x.inputs[k].name == y.inputs[k].name);
    CHECK(x.nIn == y.nIn);
    CHECK(x.nOut == y.nOut);
    for (int d = 0; d < 2; ++d) {
      CHECK(x.kernelSize[d] == y.kernelSize[d]);
      CHECK(x.stride[d] == y.stride[d]);
      CHECK(x.padding[d] == y.padding[d]);
    }
    CHECK(x.convolutionMode == y.convolutionMode);
    CHECK(x.poolingType == y.poolingType);
    CHECK(x.activation == y.activation);
    CHECK(x.weightInit == y.weightInit);
    CHECK(x.lossFunction == y.lossFunction);
    CHECK(x.dropOut == y.dropOut);
    CHECK(x.decay == y.decay);
    CHECK(x.eps == y.eps);
    CHECK(x.hasBias == y.hasBias);
  }

  CHECK(a.data.format == b.data.format);
  CHECK(a.data.directory == b.data.directory);
  CHECK(a.data.cifar100Labels == b.data.cifar100Labels);
  CHECK(a.data.trainImages == b.data.trainImages);
  CHECK(a.data.trainLabels == b.data.trainLabels);
  CHECK(a.data.testImages == b.data.testImages);
  CHECK(a.data.testLabels == b.data.testLabels);
  CHECK(a.data.shuffle == b.data.shuffle);
  CHECK(a.data.trainLimit == b.data.trainLimit);
  CHECK(a.data.testLimit == b.data.testLimit);
  CHECK(a.data.numClasses == b.data.numClasses);
  CHECK(a.data.deviceResident == b.data.deviceResident);
  CHECK(a.cuda.nccl == b.cuda.nccl);

  CHECK(a.output.directory == b.output.directory);
  CHECK(a.output.scoreEveryIterations == b.output.scoreEveryIterations);
  CHECK(a.output.checkpointEveryIterations == b.output.checkpointEveryIterations);
  CHECK(a.output.keepLast == b.output.keepLast);
  CHECK(a.output.printEvaluation == b.output.printEvaluation);
  CHECK(a.output.console == b.output.console);
  CHECK(a.output.report == b.output.report);
  CHECK(a.output.tensorboard == b.output.tensorboard);

  CHECK(a.parallel.mode == b.parallel.mode);
  CHECK(a.parallel.workers == b.parallel.workers);
  CHECK(a.parallel.prefetchBuffer == b.parallel.prefetchBuffer);
  CHECK(a.parallel.averagingFrequency == b.parallel.averagingFrequency);
  CHECK(a.parallel.averageUpdaters == b.parallel.averageUpdaters);
  CHECK(a.parallel.reportScoreAfterAveraging == b.parallel.reportScoreAfterAveraging);
  CHECK(a.parallel.blasThreads == b.parallel.blasThreads);
  CHECK(a.parallel.learningRateScaling == b.parallel.learningRateScaling);
  CHECK(a.parallel.warmupIterations == b.parallel.warmupIterations);

  CHECK(a.memory.maximumDeviceCacheableLength == b.memory.maximumDeviceCacheableLength);
  CHECK(a.memory.maximumDeviceCache == b.memory.maximumDeviceCache);
  CHECK(a.memory.maximumHostCacheableLength == b.memory.maximumHostCacheableLength);
  CHECK(a.memory.maximumHostCache == b.memory.maximumHostCache);

  CHECK(a.cuda.devices == b.cuda.devices);
  CHECK(a.cuda.allowMultiGPU == b.cuda.allowMultiGPU);
  CHECK(a.cuda.maximumGridSize == b.cuda.maximumGridSize);
  CHECK(a.cuda.maximumBlockSize == b.cuda.maximumBlockSize);
  CHECK(a.cpu.kernels == b.cpu.kernels);

  const EarlyStoppingConfig& e = a.earlyStopping;
  const EarlyStoppingConfig& f = b.earlyStopping;
  CHECK(e.enabled == f.enabled);
  CHECK(e.maxEpochs == f.maxEpochs);
  CHECK(e.patience == f.patience);
  CHECK(e.minImprovement == f.minImprovement);
  CHECK(e.bestScoreTarget == f.bestScoreTarget);
  CHECK(e.maxTimeSeconds == f.maxTimeSeconds);
  CHECK(e.maxScore == f.maxScore);
  CHECK(e.stopOnInvalidScore == f.stopOnInvalidScore);
  CHECK(e.scoreCalculator == f.scoreCalculator);
  CHECK(e.evaluateEveryNEpochs == f.evaluateEveryNEpochs);
  CHECK(e.saveBestModel == f.saveBestModel);

  CHECK(a.lossScaling.mode == b.lossScaling.mode);
  CHECK(a.lossScaling.initialScale == b.lossScaling.initialScale);
  CHECK(a.lossScaling.growthFactor == b.lossScaling.growthFactor);
  CHECK(a.lossScaling.backoffFactor == b.lossScaling.backoffFactor);
  CHECK(a.lossScaling.growthInterval == b.lossScaling.growthInterval);
}

}  // namespace dl::testing
