// Defaults, --set overrides and the shipped configs.
#include "config_test_support.hpp"
#include "nn/layer_plan.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;
using dl::testing::source_path;

TEST_CASE("an almost empty config gets the documented defaults", "[config][defaults]") {
  const dl::Config c = load(kNetwork);
  CHECK(c.sourcePath == "t.yaml");
  CHECK(c.seed == 123);
  CHECK(c.backend == dl::BackendKind::kAuto);
  CHECK(c.dtype == dl::DType::kFloat);
  CHECK(c.weightInit == dl::WeightInit::kXavier);
  CHECK_FALSE(c.activation.has_value());
  CHECK(c.updater.type == dl::UpdaterType::kNesterovs);
  CHECK(c.updater.learningRate == 0.1);  // Nesterovs' DL4J default, resolved
  CHECK(c.updater.momentum == 0.9);
  CHECK(c.schedule.type == dl::LearningRateSchedule::kNone);
  CHECK(c.l2 == 0.0);
  CHECK(c.batchSize == 128);
  CHECK(c.epochs == 1);
  CHECK(c.onNonFiniteLoss == dl::NonFiniteAction::kStop);
  CHECK(c.data.trainImages == "data/mnist/train-images-idx3-ubyte.gz");
  CHECK(c.data.testLabels == "data/mnist/t10k-labels-idx1-ubyte.gz");
  CHECK(c.data.shuffle);
  CHECK(c.data.numClasses == 10);
  CHECK(c.output.directory == "runs/mnist");
  CHECK(c.output.keepLast == 3);
  CHECK(c.parallel.mode == dl::ParallelMode::kAveraging);
  CHECK(c.parallel.workers == 1);
  CHECK(c.parallel.prefetchBuffer == 2);
  CHECK(c.parallel.averagingFrequency == 1);
  CHECK(c.memory.maximumDeviceCacheableLength == (1ull << 30));
  CHECK(c.memory.maximumHostCache == (6ull << 30));
  CHECK(c.cuda.devices.empty());
  CHECK(c.cuda.maximumBlockSize == 256);
  CHECK_FALSE(c.earlyStopping.enabled);
  CHECK_FALSE(c.earlyStopping.bestScoreTarget.has_value());
  CHECK(c.earlyStopping.scoreCalculator == dl::ScoreCalculator::kTestLoss);
}

TEST_CASE("layers are resolved: names, nIn, activation, weight init", "[config][defaults]") {
  const dl::Config c = load(
      "weightInit: RELU\n"
      "inputType: {convolutionalFlat: {height: 28, width: 28, channels: 3}}\n"
      "layers:\n"
      "  - convolution: {nOut: 6, kernelSize: 3}\n"
      "  - subsampling: {kernelSize: 2, stride: 2}\n"
      "  - dense: {nOut: 20, weightInit: ZERO, name: hidden}\n"
      "  - dropout: {}\n"
      "  - output: {nOut: 10}\n");
  REQUIRE(c.layers.size() == 5);
  CHECK(c.layers[0].name == "convolution0");
  CHECK(c.layers[0].nIn == 3);
  CHECK(c.layers[0].kernelSize[0] == 3);
  CHECK(c.layers[0].kernelSize[1] == 3);
  CHECK(c.layers[0].activation == dl::Activation::kIdentity);
  CHECK(c.layers[0].weightInit == dl::WeightInit::kRelu);
  CHECK(c.layers[1].name == "subsampling1");
  CHECK(c.layers[1].poolingType == dl::PoolingType::kMax);
  CHECK(c.layers[2].name == "hidden");
  CHECK(c.layers[2].nIn == 6 * 13 * 13);
  CHECK(c.layers[2].activation == dl::Activation::kRelu);
  CHECK(c.layers[2].weightInit == dl::WeightInit::kZero);
  CHECK(c.layers[3].name == "dropout3");
  CHECK(c.layers[3].dropOut == 0.5);
  CHECK(c.layers[4].activation == dl::Activation::kSoftmax);
  CHECK(c.layers[4].lossFunction == dl::LossFunction::kNegativeLogLikelihood);
  CHECK(c.layers[4].nIn == 20);
  CHECK(c.layers[3].where.line == 7);
  CHECK(c.layers[3].where.str() == "t.yaml:7:5");
}

TEST_CASE("the global activation applies to layers that set none", "[config][defaults]") {
  const dl::Config c = load(
      "activation: tanh\ninputType: {feedForward: {size: 4}}\nlayers:\n"
      "  - dense: {nOut: 3}\n  - dense: {nOut: 3, activation: sigmoid}\n"
      "  - output: {nOut: 10, activation: softmax}\n");
  CHECK(c.layers[0].activation == dl::Activation::kTanh);
  CHECK(c.layers[1].activation == dl::Activation::kSigmoid);
  CHECK(c.layers[2].activation == dl::Activation::kSoftmax);
}

TEST_CASE("the updater: shorthand, effective learning rate", "[config][defaults]") {
  CHECK(load("updater: adam\n" + kNetwork).updater.type == dl::UpdaterType::kAdam);
  CHECK(load("updater: adam\n" + kNetwork).updater.learningRate == 1e-3);
  CHECK(load("updater: sgd\n" + kNetwork).updater.learningRate == 1e-3);
  CHECK(load("updater: rmsprop\n" + kNetwork).updater.learningRate == 0.1);
  CHECK(load("updater: {type: sgd, learningRate: 0.5}\n" + kNetwork).updater.learningRate == 0.5);

  dl::UpdaterConfig u;
  u.type = dl::UpdaterType::kAdam;
  CHECK(dl::effective_learning_rate(u) == 1e-3);
  u.learningRate = 0.25;
  CHECK(dl::effective_learning_rate(u) == 0.25);
}

TEST_CASE("byte sizes in the memory section", "[config][defaults]") {
  const dl::Config c = load(
      "memory:\n  maximumDeviceCacheableLength: 512MiB\n  maximumDeviceCache: 1.5GB\n"
      "  maximumHostCacheableLength: 4096\n  maximumHostCache: \"2GiB\"\n" +
      kNetwork);
  CHECK(c.memory.maximumDeviceCacheableLength == 512ull * 1024 * 1024);
  CHECK(c.memory.maximumDeviceCache == 1500000000ull);
  CHECK(c.memory.maximumHostCacheableLength == 4096ull);
  CHECK(c.memory.maximumHostCache == 2ull * 1024 * 1024 * 1024);
  const std::string unit = load_error("memory:\n  maximumDeviceCache: 3 furlongs\n" + kNetwork);
  CHECK_THAT(unit, StartsWith("t.yaml:2:23: memory.maximumDeviceCache = '3 furlongs'"));
  CHECK_THAT(unit, Contains("unknown unit 'furlongs'"));
  CHECK_THAT(load_error("memory:\n  maximumHostCache: -1GiB\n" + kNetwork),
             Contains("is negative"));
  // A cache below the default cacheable length: the error is at the key the user wrote (it was
  // at the file alone, no line, since the other key was a default).
  CHECK_THAT(load_error("memory:\n  maximumHostCache: 512MiB\n" + kNetwork),
             StartsWith("t.yaml:2:21: memory.maximumHostCacheableLength (1073741824 bytes) is "
                        "larger than memory.maximumHostCache (536870912 bytes)"));
  CHECK_THAT(load_error("memory:\n  maximumDeviceCacheableLength: 7GiB\n" + kNetwork),
             StartsWith("t.yaml:2:33: memory.maximumDeviceCacheableLength"));
}

TEST_CASE("SourceLocation::str", "[config][defaults]") {
  CHECK(dl::SourceLocation{"a.yaml", 3, 7}.str() == "a.yaml:3:7");
  CHECK(dl::SourceLocation{"a.yaml", 0, 0}.str() == "a.yaml");
  CHECK(dl::SourceLocation{"--set epochs=3", 0, 0}.str() == "--set epochs=3");
}

TEST_CASE("overrides set nested keys", "[config][overrides]") {
  const dl::Config c =
      load("updater:\n  learningRate: 0.01\n" + kNetwork,
           {"epochs=3", "updater.learningRate=0.05", "parallel.workers=2", "data.trainLimit=1000",
            "cuda.devices=[0,1]", "output.directory=runs/x"});
  CHECK(c.epochs == 3);
  CHECK(c.updater.learningRate == 0.05);
  CHECK(c.parallel.workers == 2);
  CHECK(c.data.trainLimit == 1000);
  CHECK(c.cuda.devices == std::vector<int>{0, 1});
  CHECK(c.output.directory == "runs/x");
}

TEST_CASE("overrides address layers by index", "[config][overrides]") {
  CHECK(load(kNetwork, {"layers.0.nOut=32"}).layers[0].nOut == 32);
  CHECK(load(kNetwork, {"layers.0.dense.nOut=33"}).layers[0].nOut == 33);
  CHECK(load(kNetwork, {"layers.0.activation=tanh"}).layers[0].activation == dl::Activation::kTanh);
  const dl::Config replaced = load(kNetwork, {"layers.0={dropout: {dropOut: 0.8}}"});
  CHECK(replaced.layers[0].type == dl::LayerType::kDropout);
  CHECK(replaced.layers[0].dropOut == 0.8);
  const dl::Config settings = load(kNetwork, {"layers.0.dense={nOut: 7}"});
  CHECK(settings.layers[0].nOut == 7);
}

TEST_CASE("overrides apply in order and reach shorthand and empty sections",
          "[config][overrides]") {
  CHECK(load(kNetwork, {"epochs=2", "epochs=5"}).epochs == 5);
  const dl::Config shorthand = load("updater: adam\n" + kNetwork, {"updater.beta1=0.8"});
  CHECK(shorthand.updater.type == dl::UpdaterType::kAdam);
  CHECK(shorthand.updater.beta1 == 0.8);
  CHECK(load("data:\n" + kNetwork, {"data.testLimit=7"}).data.testLimit == 7);
  CHECK(load(kNetwork, {"updater=sgd"}).updater.type == dl::UpdaterType::kSgd);
  // A shorthand given by a --set is gone into by a later one, as the file's is (it was refused:
  // "'updater' is 'adam', not a section with keys").
  const dl::Config later = load(kNetwork, {"updater=adam", "updater.learningRate=0.5"});
  CHECK(later.updater.type == dl::UpdaterType::kAdam);
  CHECK(later.updater.learningRate == 0.5);
}

TEST_CASE("a map given to a section merges into it, as its keys one by one would",
          "[config][overrides]") {
  // It replaced the section: the file's data paths fell back to the defaults, silently.
  const dl::Config data = load("data:\n  trainImages: a.gz\n  testLimit: 9\n" + kNetwork,
                               {"data={trainLimit: 1000}"});
  CHECK(data.data.trainLimit == 1000);
  CHECK(data.data.trainImages == "a.gz");
  CHECK(data.data.testLimit == 9);
  const dl::Config updater =
      load("updater: {type: adam, beta1: 0.8}\n" + kNetwork, {"updater={learningRate: 0.05}"});
  CHECK(updater.updater.type == dl::UpdaterType::kAdam);
  CHECK(updater.updater.beta1 == 0.8);
  CHECK(updater.updater.learningRate == 0.05);
  // A map that names the kind replaces the section: the old kind's keys would be refused.
  const dl::Config switched = load("updater: {type: nesterovs, momentum: 0.5}\n" + kNetwork,
                                   {"updater={type: adam}"});
  CHECK(switched.updater.type == dl::UpdaterType::kAdam);
  CHECK(load(kNetwork, {"inputType={feedForward: {size: 6}}"}).inputType.size == 6);
  // Nested maps merge too; a list item given whole is still replaced whole.
  const dl::Config nested = load("earlyStopping: {enabled: true, patience: 3}\n" + kNetwork,
                                 {"earlyStopping={maxEpochs: 4}"});
  CHECK(nested.earlyStopping.patience == 3);
  CHECK(nested.earlyStopping.maxEpochs == 4);
  CHECK(load(kNetwork, {"layers.0={dropout: {dropOut: 0.8}}"}).layers[0].type ==
        dl::LayerType::kDropout);
}

TEST_CASE("an unknown override path gets did-you-mean at the --set place", "[config][overrides]") {
  const std::string top = load_error(kNetwork, {"epoch=3"});
  CHECK_THAT(top, StartsWith("--set epoch=3: unknown key 'epoch' at the top level"));
  CHECK_THAT(top, Contains("did you mean 'epochs'?"));

  const std::string nested = load_error(kNetwork, {"updater.learningrate=0.1"});
  CHECK_THAT(nested, StartsWith("--set updater.learningrate=0.1: unknown key 'learningrate'"));
  CHECK_THAT(nested, Contains("did you mean 'learningRate'?"));

  const std::string section = load_error(kNetwork, {"paralel.workers=2"});
  CHECK_THAT(section, StartsWith("--set paralel.workers=2: unknown key 'paralel'"));
  CHECK_THAT(section, Contains("did you mean 'parallel'?"));

  const std::string layer = load_error(kNetwork, {"layers.1.nOutt=3"});
  CHECK_THAT(layer, StartsWith("--set layers.1.nOutt=3: unknown key 'nOutt' in layers.1 (output)"));
}

TEST_CASE("a bad override value is reported at the --set place", "[config][overrides]") {
  const std::string type = load_error(kNetwork, {"parallel.workers=two"});
  CHECK_THAT(type, StartsWith("--set parallel.workers=two: parallel.workers must be an integer"));
  const std::string range = load_error(kNetwork, {"layers.0.nOut=0"});
  CHECK_THAT(range, StartsWith("--set layers.0.nOut=0: layers.0.nOut = 0 is out of range"));
  const std::string empty = load_error(kNetwork, {"epochs="});
  CHECK_THAT(empty, StartsWith("--set epochs=: epochs has no value"));
  const std::string syntax = load_error(kNetwork, {"cuda.devices=[0,1"});
  CHECK_THAT(syntax, StartsWith("--set cuda.devices=[0,1: the value is not valid YAML"));
  // A value the override did not touch is still reported at its line in the file.
  const std::string file = load_error("epochs: 0\n" + kNetwork, {"seed=4"});
  CHECK_THAT(file, StartsWith("t.yaml:1:9: epochs = 0"));
}

TEST_CASE("malformed override paths", "[config][overrides]") {
  CHECK_THAT(load_error(kNetwork, {"epochs"}),
             StartsWith("--set epochs: expected key.path=value; "));
  CHECK_THAT(load_error(kNetwork, {"=3"}), StartsWith("--set =3: expected key.path=value"));
  CHECK_THAT(load_error(kNetwork, {"updater..type=sgd"}), Contains("has an empty part"));
  const std::string index = load_error(kNetwork, {"layers.2.nOut=3"});
  CHECK_THAT(index, StartsWith("--set layers.2.nOut=3: index 2 is past the end of layers"));
  CHECK_THAT(index, Contains("use an index from 0 to 1"));
  CHECK_THAT(load_error(kNetwork, {"layers.first.nOut=3"}),
             Contains("'layers' is a list, so the part after it must be an index"));
  CHECK_THAT(load_error("seed: 4\n" + kNetwork, {"seed.low=3"}),
             StartsWith("--set seed.low=3: 'seed' is '4', not a section with keys"));
}

TEST_CASE("the shipped MNIST config is DL4J's LeNet example", "[config][shipped]") {
  const dl::Config c = dl::load_config_file(source_path("configs/mnist.yaml"));
  CHECK(c.seed == 123);
  CHECK(c.weightInit == dl::WeightInit::kXavier);
  CHECK(c.updater.type == dl::UpdaterType::kNesterovs);
  CHECK(c.updater.learningRate == 0.01);
  CHECK(c.updater.momentum == 0.9);
  CHECK(c.l2 == 0.0005);
  CHECK(c.batchSize == 128);
  CHECK(c.epochs == 20);  // the example's one pass would leave the offline digits untrained
  CHECK(c.inputType.kind == dl::InputTypeConfig::Kind::kConvolutionalFlat);
  CHECK(c.inputType.height == 28);
  CHECK(c.inputType.width == 28);
  CHECK(c.inputType.channels == 1);
  REQUIRE(c.layers.size() == 6);
  const dl::LayerType types[] = {dl::LayerType::kConvolution, dl::LayerType::kSubsampling,
                                 dl::LayerType::kConvolution, dl::LayerType::kSubsampling,
                                 dl::LayerType::kDense,       dl::LayerType::kOutput};
  const int nouts[] = {20, 0, 50, 0, 500, 10};
  for (int i = 0; i < 6; ++i) {
    CHECK(c.layers[i].type == types[i]);
    if (nouts[i] > 0) CHECK(c.layers[i].nOut == nouts[i]);
  }
  CHECK(c.layers[0].activation == dl::Activation::kIdentity);
  CHECK(c.layers[1].kernelSize[0] == 2);
  CHECK(c.layers[1].stride[1] == 2);
  CHECK(c.layers[4].activation == dl::Activation::kRelu);
  CHECK(c.layers[5].lossFunction == dl::LossFunction::kNegativeLogLikelihood);
  CHECK(c.parallel.workers == 2);
  CHECK(c.parallel.prefetchBuffer == 24);
  CHECK(c.parallel.averagingFrequency == 3);
  CHECK(c.parallel.reportScoreAfterAveraging);
  CHECK(c.parallel.averageUpdaters);
  CHECK(c.parallel.mode == dl::ParallelMode::kAveraging);
  CHECK(c.data.trainImages == "data/mnist/train-images-idx3-ubyte.gz");
  CHECK(c.data.trainLabels == "data/mnist/train-labels-idx1-ubyte.gz");
  CHECK(c.data.testImages == "data/mnist/t10k-images-idx3-ubyte.gz");
  CHECK(c.data.testLabels == "data/mnist/t10k-labels-idx1-ubyte.gz");
  CHECK(c.output.directory == "runs/mnist");
  CHECK(c.backend == dl::BackendKind::kAuto);
  // The data-parallel recipe chosen by bench/recipe_study.sh (bench/RESULTS.md).
  CHECK(c.parallel.workers == 2);
  CHECK(c.parallel.learningRateScaling == dl::LearningRateScaling::kLinear);
  CHECK(c.parallel.warmupIterations == 20);
}

TEST_CASE("the shipped Fashion-MNIST and small test configs load", "[config][shipped]") {
  const dl::Config fashion = dl::load_config_file(source_path("configs/fashion-mnist.yaml"));
  CHECK(fashion.parallel.workers == 1);
  CHECK(fashion.parallel.prefetchBuffer == 2);
  CHECK(fashion.data.trainImages == "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
  CHECK(fashion.data.testLabels == "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  CHECK(fashion.output.directory == "runs/fashion-mnist");
  CHECK(fashion.layers.size() == 6);
  CHECK(fashion.updater.learningRate == 0.01);

  const dl::Config small = dl::load_config_file(source_path("configs/lenet-small-test.yaml"));
  CHECK(small.batchSize == 32);
  CHECK(small.parallel.workers == 1);
  REQUIRE(small.layers.size() == 4);
  CHECK(small.layers[0].nOut == 8);
  CHECK(small.layers[2].nOut == 64);
  CHECK(small.layers[2].nIn == 8 * 12 * 12);
  CHECK(small.output.directory == "runs/small");
  CHECK_THAT(small.data.trainImages, StartsWith("data/small/"));
}
