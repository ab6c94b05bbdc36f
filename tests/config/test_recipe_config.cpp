// The keys of the Keras port: data.format / directory / cifar100Labels, AdamW's weightDecay, the
// cosine and one-cycle schedules with warm-up, gradientNormalization, and subsampling's window
// that has no default; each with its round trip and its errors.
#include "config/recipe_checks.hpp"
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::check_same_config;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;
using dl::testing::source_path;

namespace {

const std::string kCifarNetwork =
    "inputType:\n"
    "  convolutionalFlat: {height: 32, width: 32, channels: 3}\n"
    "layers:\n"
    "  - convolution: {nOut: 4, kernelSize: 3, convolutionMode: Same}\n"
    "  - output: {nOut: 10}\n";

}  // namespace

TEST_CASE("recipe keys: defaults, and a round trip away from them", "[config][recipe]") {
  const dl::Config defaults = load(kNetwork);
  CHECK(defaults.data.format == dl::DataFormat::kIdx);
  CHECK(defaults.data.directory == "data/cifar-10-batches-bin");
  CHECK(defaults.updater.weightDecay == 0.01);
  CHECK(defaults.gradientNormalization == dl::GradientNormalization::kNone);
  CHECK(defaults.gradientNormalizationThreshold == 1.0);
  CHECK(defaults.schedule.warmupIterations == 0);

  const std::string yaml =
      "updater: {type: adamw, weightDecay: 0.05}\n"
      "learningRateSchedule: {type: oneCycle, warmupIterations: 30, totalIterations: 100,\n"
      "                       minLearningRate: 0.0001, divFactor: 10, finalDivFactor: 100}\n"
      "gradientNormalization: ClipL2PerParamType\ngradientNormalizationThreshold: 0.5\n"
      "data: {format: cifar100, directory: /d/cifar-100-binary, cifar100Labels: coarse,\n"
      "       numClasses: 20}\n" +
      kCifarNetwork;
  const dl::Config c = load(yaml);
  CHECK(c.updater.type == dl::UpdaterType::kAdamW);
  CHECK(c.updater.learningRate == 1e-3);  // Adam's DL4J default
  CHECK(c.schedule.type == dl::LearningRateSchedule::kOneCycle);
  CHECK(c.gradientNormalization == dl::GradientNormalization::kClipL2PerParamType);
  CHECK(c.data.cifar100Labels == dl::Cifar100Labels::kCoarse);
  const dl::Config again = dl::load_config_string(dl::dump_config_yaml(c), "dump.yaml");
  check_same_config(c, again);
  // Enum values match in any letter case, as every enum of the config does.
  CHECK(load("gradientNormalization: clipelementwiseabsolutevalue\n" + kNetwork)
            .gradientNormalization == dl::GradientNormalization::kClipElementWiseAbsoluteValue);
}

TEST_CASE("recipe keys: ranges", "[config][recipe]") {
  CHECK_THAT(load_error("gradientNormalizationThreshold: 0\n" + kNetwork),
             StartsWith("t.yaml:1:33: ") && Contains("gradientNormalizationThreshold"));
  CHECK_THAT(load_error("updater: {type: adamw, weightDecay: -0.1}\n" + kNetwork),
             Contains("updater.weightDecay"));
  // PyTorch's SGD(weight_decay=5e-4) written as weightDecay would train with no decay.
  CHECK(load_error("updater: {type: nesterovs, momentum: 0.9, weightDecay: 5.0e-4}\n" + kNetwork) ==
        "t.yaml:1:56: updater.weightDecay is set, but updater.type nesterovs does not read it: "
        "decoupled weight decay is adamw's, so this run would train with no decay; set "
        "updater.type: adamw; or, for PyTorch's weight_decay with SGD or Adam (an L2 term added "
        "to the gradient), set l2 (and l2Bias for biases) and remove updater.weightDecay");
  CHECK_THAT(load_error("updater: {type: adam, weightDecayBias: false}\n" + kNetwork),
             Contains("updater.weightDecayBias is set, but updater.type adam does not read it"));
  CHECK_THAT(load_error(kNetwork, {"updater.type=sgd", "updater.weightDecay=0.1"}),
             Contains("--set updater.weightDecay=0.1: updater.weightDecay is set"));
  // Their defaults pass (config.resolved.yaml holds every key), and so do the other rules' keys
  // under another rule (a config switched by --set updater.type keeps its momentum).
  CHECK(load("updater: {type: adam, weightDecay: 0.01, weightDecayBias: true, momentum: 0.5}\n" +
             kNetwork)
            .updater.momentum == 0.5);
  CHECK_THAT(load_error("learningRateSchedule: {type: oneCycle, divFactor: 0.5}\n" + kNetwork),
             Contains("learningRateSchedule.divFactor"));
  CHECK_THAT(load_error("gradientNormalization: ClipL2\n" + kNetwork),
             Contains("gradient normalization") && Contains("ClipL2Global"));
  CHECK_THAT(load_error("data: {format: cifar}\n" + kNetwork),
             Contains("unknown data format 'cifar' for data.format; did you mean 'cifar10'?"));
}

TEST_CASE("schedule checks: warm-up within the run, cosine decays", "[config][recipe]") {
  CHECK_THAT(load_error("learningRateSchedule: {type: cosine, warmupIterations: 100,\n"
                        "                       totalIterations: 100}\n" +
                        kNetwork),
             StartsWith("t.yaml:1:56: ") &&
                 Contains("warmupIterations (100) is not below totalIterations (100)"));
  CHECK_THAT(load_error("updater: {type: sgd, learningRate: 0.01}\n"
                        "learningRateSchedule: {type: cosine, minLearningRate: 0.01}\n" +
                        kNetwork),
             StartsWith("t.yaml:2:55: ") && Contains("would not decay"));
}

TEST_CASE("data.format cifar10/cifar100: classes and input shape checked at load",
          "[config][recipe]") {
  CHECK(load("data: {format: cifar10}\n" + kCifarNetwork).data.format == dl::DataFormat::kCifar10);
  // numClasses left at its default: the error is at the format the user wrote.
  CHECK_THAT(load_error("data: {format: cifar100}\n" + kCifarNetwork),
             StartsWith("t.yaml:1:16: ") &&
                 Contains("data.numClasses is 10 but CIFAR-100 with cifar100Labels: fine has 100 "
                          "classes; set data.numClasses: 100"));
  CHECK_THAT(load_error("data: {format: cifar100, cifar100Labels: coarse, numClasses: 100}\n" +
                        kCifarNetwork),
             Contains("set data.numClasses: 20"));
  // A CIFAR format with the MNIST-shaped input, at the inputType key.
  CHECK_THAT(load_error("data: {format: cifar10}\n" + kNetwork),
             StartsWith("t.yaml:3:3: ") &&
                 Contains("convolutionalFlat: {height: 32, width: 32, channels: 3}"));
  CHECK(load("data: {format: cifar10}\ninputType: {feedForward: {size: 3072}}\n"
             "layers: [{output: {nOut: 10}}]\n")
            .data.format == dl::DataFormat::kCifar10);
}

TEST_CASE("channelMean and channelStd: one value per channel of the data, not of inputType",
          "[config][recipe]") {
  // CIFAR read as flat vectors still has three channel planes, which the loader normalizes one
  // by one: three values are the ones it reads. One value was accepted (inputType's "1 channel")
  // and the loader read two more past it.
  const std::string flat_cifar =
      "inputType: {feedForward: {size: 3072}}\nlayers: [{output: {nOut: 10}}]\n";
  const dl::Config three = load(
      "data: {format: cifar10, normalize: true, channelMean: [0.5, 0.4, 0.3], "
      "channelStd: [0.2, 0.2, 0.2]}\n" + flat_cifar);
  CHECK(three.data.channelMean.size() == 3);
  CHECK_THAT(load_error("data: {format: cifar10, normalize: true, channelMean: [0.5], "
                        "channelStd: [0.2]}\n" + flat_cifar),
             StartsWith("t.yaml:1:55: ") &&
                 Contains("data.channelMean has 1 values but the data (data.format cifar10) has 3 "
                          "channel(s); give one value per channel"));
  // IDX images are one grey plane however inputType arranges their 784 values.
  CHECK_THAT(load_error("data: {normalize: true, channelMean: [0.1, 0.1, 0.1, 0.1], "
                        "channelStd: [1, 1, 1, 1]}\ninputType: {convolutionalFlat: {height: 14, "
                        "width: 14, channels: 4}}\nlayers: [{output: {nOut: 10}}]\n"),
             Contains("has 4 values but the data (data.format idx) has 1 channel(s)"));
}

TEST_CASE("subsampling: kernelSize and stride have no default", "[config][recipe]") {
  const std::string head =
      "inputType: {convolutionalFlat: {height: 24, width: 24, channels: 1}}\n"
      "layers:\n";
  const std::string tail = "  - output: {nOut: 10}\n";
  const std::string no_stride = load_error(head + "  - subsampling: {kernelSize: 2}\n" + tail);
  CHECK_THAT(no_stride, StartsWith("t.yaml:3:5: ") &&
                            Contains("missing required key 'stride' in layers.0 (subsampling)") &&
                            Contains("Keras's default stride is the pool size, DL4J's is 2"));
  CHECK_THAT(load_error(head + "  - subsampling: {stride: 2}\n" + tail),
             Contains("missing required key 'kernelSize'"));
  // Both given: 24x24 pooled 2x2 with stride 2 is 12x12.
  const dl::Config c = load(head + "  - subsampling: {kernelSize: 2, stride: 2}\n" + tail);
  CHECK(c.layers[1].nIn == 144);
  // A convolution keeps DL4J's defaults (5x5, stride 1).
  CHECK(load(head + "  - convolution: {nOut: 2}\n" + tail).layers[1].nIn == 2 * 20 * 20);
}

TEST_CASE("configs/cifar10.yaml: the seed's Keras network and recipe", "[config][recipe]") {
  const dl::Config c = dl::load_config_file(source_path("configs/cifar10.yaml"));
  CHECK(c.data.format == dl::DataFormat::kCifar10);
  CHECK(c.updater.type == dl::UpdaterType::kAdam);
  CHECK(c.updater.learningRate == 0.001);
  CHECK(c.updater.epsilon == 1e-7);
  CHECK(c.batchSize == 32);
  CHECK(c.epochs == 10);
  CHECK(c.weightInit == dl::WeightInit::kXavierUniform);
  REQUIRE(c.layers.size() == 6);
  CHECK(c.layers[0].convolutionMode == dl::ConvolutionMode::kSame);
  CHECK(c.layers[4].nIn == 8 * 8 * 64);  // Flatten after two 2x2 poolings of 32x32x64
}

TEST_CASE("keys nothing reads under the other settings are noted, not refused", "[config]") {
  // The shipped configs set nothing their rules ignore.
  for (const char* name :
       {"configs/mnist.yaml", "configs/resnet20-cifar10.yaml", "configs/cifar10-fast.yaml"})
    CHECK(dl::unread_key_notes(dl::load_config_file(source_path(name))).empty());
  const dl::Config switched =
      load(kNetwork, {"updater={type: adam, momentum: 0.95, beta1: 0.8, rmsDecay: 0.9}",
                      "earlyStopping.patience=3", "earlyStopping.maxEpochs=5"});
  CHECK(dl::unread_key_notes(switched) ==
        std::vector<std::string>{
            "updater.momentum (0.95) has no effect: updater.type adam does not read it; it is "
            "nesterovs's (adam's is beta1)",
            "updater.rmsDecay (0.9) has no effect: updater.type adam does not read it; it is "
            "rmsprop's",
            "earlyStopping.maxEpochs, earlyStopping.patience have no effect: "
            "earlyStopping.enabled is false"});
  // Read by their rule, or enabled: nothing to say. Defaults are never noted.
  CHECK(dl::unread_key_notes(load(kNetwork, {"updater={type: rmsprop, rmsDecay: 0.9}"})).empty());
  CHECK(dl::unread_key_notes(
            load(kNetwork, {"earlyStopping.enabled=true", "earlyStopping.patience=3"}))
            .empty());
  CHECK(dl::unread_key_notes(load(kNetwork, {"updater.type=sgd"})).empty());
  // A schedule's keys its type does not read (minLearningRate under step decayed below it).
  CHECK(dl::unread_key_notes(load(kNetwork, {"learningRateSchedule={type: step, step: 10, "
                                             "minLearningRate: 0.001, divFactor: 10}"})) ==
        std::vector<std::string>{
            "learningRateSchedule.minLearningRate has no effect: learningRateSchedule.type step "
            "does not read it; it is cosine's",
            "learningRateSchedule.divFactor has no effect: learningRateSchedule.type step does "
            "not read it; it is oneCycle's"});
  CHECK(dl::unread_key_notes(load(kNetwork, {"learningRateSchedule={type: oneCycle, "
                                             "totalIterations: 100, divFactor: 10, "
                                             "warmupIterations: 5}"}))
            .empty());
}
