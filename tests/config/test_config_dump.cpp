// The resolved dump: loading it again gives the same Config, and its hash identifies a config.
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using dl::testing::check_same_config;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::source_path;

TEST_CASE("load(dump(c)) == c for the shipped configs", "[config][dump]") {
  for (const char* file :
       {"configs/mnist.yaml", "configs/fashion-mnist.yaml", "configs/lenet-small-test.yaml",
        "configs/cifar10.yaml", "configs/resnet20-cifar10.yaml", "configs/resnet18-cifar10.yaml",
        "configs/cifar10-fast.yaml"}) {
    INFO(file);
    const dl::Config original = dl::load_config_file(source_path(file));
    const std::string dumped = dl::dump_config_yaml(original);
    const dl::Config again = dl::load_config_string(dumped, "dump.yaml");
    check_same_config(original, again);
    CHECK(dl::dump_config_yaml(again) == dumped);
  }
}

TEST_CASE("load(dump(c)) == c with every section away from its default", "[config][dump]") {
  const std::string yaml =
      "seed: 18446744073709551615\nbackend: cuda\ndtype: bfloat16\nweightInit: UNIFORM\n"
      "activation: leakyrelu\n"
      "updater: {type: adamw, learningRate: 0.003, momentum: 0.5, beta1: 0.7, beta2: 0.95,\n"
      "          epsilon: 1e-6, rmsDecay: 0.9, weightDecayBias: false}\n"
      "learningRateSchedule: {type: step, gamma: 0.5, power: 2, step: 300}\n"
      "l2: 1e-4\nl2Bias: 0.25\nbatchSize: 7\nepochs: 9\nonNonFiniteLoss: skip\n"
      "inputType: {feedForward: {size: 20}}\n"
      "layers:\n"
      "  - batchNormalization: {decay: 0.8, eps: 0.001, name: bn}\n"
      "  - dense: {nOut: 30, weightInit: NORMAL, hasBias: false}\n"
      "  - dropout: {dropOut: 0.7}\n"
      "  - output: {nOut: 5, activation: sigmoid, lossFunction: mse}\n"
      "data: {trainImages: a/b.gz, trainLabels: 'null', testImages: '123', testLabels: x,\n"
      "       shuffle: false, trainLimit: 100, testLimit: 50, numClasses: 5,\n"
      "       deviceResident: never}\n"
      "output: {directory: 'out dir/x', scoreEveryIterations: 3, checkpointEveryIterations: 40,\n"
      "         keepLast: 1, printEvaluation: false, console: jsonl, report: false,\n"
      "         tensorboard: true}\n"
      "parallel: {mode: synchronous, workers: 4, prefetchBuffer: 0, averagingFrequency: 5,\n"
      "           averageUpdaters: false, reportScoreAfterAveraging: false, blasThreads: 2,\n"
      "           learningRateScaling: linear, warmupIterations: 200}\n"
      "memory: {maximumDeviceCacheableLength: 1KiB, maximumDeviceCache: 1.5GB,\n"
      "         maximumHostCacheableLength: 0, maximumHostCache: 3}\n"
      "cuda: {devices: [2, 0], allowMultiGPU: false, nccl: always, maximumGridSize: 99,\n"
      "       maximumBlockSize: 64}\n"
      "cpu: {kernels: cblas}\n"
      "earlyStopping: {enabled: true, maxEpochs: 20, patience: 3, minImprovement: 0.001,\n"
      "                bestScoreTarget: 0.98, maxTimeSeconds: 3600.5, maxScore: 1e6,\n"
      "                stopOnInvalidScore: false, scoreCalculator: f1, evaluateEveryNEpochs: 2,\n"
      "                saveBestModel: false}\n"
      "lossScaling: {mode: static, initialScale: 512, growthFactor: 8, backoffFactor: 0.25,\n"
      "              growthInterval: 10}\n";
  const dl::Config original = load(yaml);
  CHECK(original.data.trainLabels == "null");
  CHECK(original.data.testImages == "123");
  CHECK(original.data.deviceResident == dl::DeviceResidency::kNever);
  CHECK(original.cuda.nccl == dl::NcclUsage::kAlways);
  CHECK(original.cuda.devices == std::vector<int>{2, 0});
  CHECK(original.cpu.kernels == dl::CpuKernels::kCblas);
  CHECK(original.earlyStopping.bestScoreTarget == 0.98);
  CHECK(original.schedule.type == dl::LearningRateSchedule::kStep);
  CHECK_FALSE(original.layers[1].hasBias);
  CHECK_FALSE(original.updater.weightDecayBias);
  const std::string dumped = dl::dump_config_yaml(original);
  CHECK_THAT(dumped, Contains("hasBias: false"));
  CHECK_THAT(dumped, Contains("weightDecayBias: false"));
  const dl::Config again = dl::load_config_string(dumped, "dump.yaml");
  check_same_config(original, again);
}

TEST_CASE("a programmatic Config round-trips too", "[config][dump]") {
  dl::Config c;
  c.inputType.kind = dl::InputTypeConfig::Kind::kFeedForward;
  c.inputType.size = 12;
  dl::LayerConfig out;
  out.type = dl::LayerType::kOutput;
  out.nOut = 10;
  c.layers = {out};
  const dl::Config again = dl::load_config_string(dl::dump_config_yaml(c), "dump.yaml");
  // Loading resolves what the programmatic config left implicit...
  CHECK(again.layers[0].name == "output0");
  CHECK(again.layers[0].nIn == 12);
  CHECK(again.layers[0].activation == dl::Activation::kSoftmax);
  CHECK(again.updater.learningRate == 0.1);
  // ...and a second round trip changes nothing.
  check_same_config(again, dl::load_config_string(dl::dump_config_yaml(again), "dump2.yaml"));
}

TEST_CASE("the dump spells enums as in YAML and states the effective learning rate",
          "[config][dump]") {
  const std::string dumped = dl::dump_config_yaml(load("updater: adam\n" + kNetwork));
  CHECK_THAT(dumped, Contains("type: adam"));
  CHECK_THAT(dumped, Contains("learningRate: 0.001"));
  CHECK_THAT(dumped, Contains("dtype: FLOAT"));
  CHECK_THAT(dumped, Contains("convolutionalFlat:"));
  CHECK_THAT(dumped, Contains("lossFunction: negativeloglikelihood"));
  CHECK_THAT(dumped, Contains("devices: all"));
  // Keys at their default that most configs never write stay out of the dump (and its hash).
  CHECK_THAT(dumped, !Contains("hasBias"));
  CHECK_THAT(dumped, !Contains("weightDecayBias"));
}

TEST_CASE("config_hash: equal configs hash equal, a changed value changes it", "[config][dump]") {
  const dl::Config a = dl::load_config_file(source_path("configs/mnist.yaml"));
  const dl::Config b = dl::load_config_file(source_path("configs/mnist.yaml"));
  CHECK(dl::config_hash(a) == dl::config_hash(b));
  // The source file is not part of the config's identity.
  const dl::Config from_dump = dl::load_config_string(dl::dump_config_yaml(a), "elsewhere.yaml");
  CHECK(dl::config_hash(from_dump) == dl::config_hash(a));
  // Writing a default explicitly is the same config.
  CHECK(dl::config_hash(dl::load_config_file(source_path("configs/mnist.yaml"),
                                             {"dtype=FLOAT", "parallel.blasThreads=0"})) ==
        dl::config_hash(a));

  for (const char* change : {"epochs=2", "updater.learningRate=0.02", "layers.0.nOut=21",
                             "parallel.workers=3", "data.shuffle=false", "seed=124"}) {
    INFO(change);
    const dl::Config changed = dl::load_config_file(source_path("configs/mnist.yaml"), {change});
    CHECK(dl::config_hash(changed) != dl::config_hash(a));
  }
}
