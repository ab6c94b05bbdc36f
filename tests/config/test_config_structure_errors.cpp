// Config errors in enum values (a suggestion, or the list; any letter case), HALF and BFLOAT16
// without CUDA, and the structural mistakes (a duplicate key, a layer's settings not under its
// type, inputType with both kinds or none, two layers with one name, CUDA devices): the message,
// its place and the fix. The other value errors: test_config_errors.cpp.
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

TEST_CASE("unknown enum values get a suggestion or the list", "[config][errors]") {
  const std::string activation = load_error("activation: rleu\n" + kNetwork);
  CHECK_THAT(activation, StartsWith("t.yaml:1:13: "));
  CHECK_THAT(activation, Contains("unknown activation 'rleu'"));
  CHECK_THAT(activation, Contains("did you mean 'relu'?"));

  // (adamw is an updater of its own.)
  const std::string updater = load_error("updater: adan\n" + kNetwork);
  CHECK_THAT(updater, StartsWith("t.yaml:1:10: "));
  CHECK_THAT(updater, Contains("did you mean 'adam'?"));

  const std::string loss = load_error(
      "inputType: {feedForward: {size: 4}}\nlayers:\n  - output: {nOut: 10, lossFunction: "
      "mcxnet}\n");
  CHECK_THAT(loss, StartsWith("t.yaml:3:38: "));
  CHECK_THAT(loss, Contains("unknown loss function 'mcxnet' for layers.0.lossFunction"));
  CHECK_THAT(loss, Contains("did you mean 'mcxent'?"));

  const std::string none_close = load_error("backend: tpu9000\n" + kNetwork);
  CHECK_THAT(none_close, StartsWith("t.yaml:1:10: "));
  CHECK_THAT(none_close, Contains("use one of: cpu, cuda, auto"));

  const std::string layer_type = load_error(
      "inputType: {feedForward: {size: 4}}\nlayers:\n  - Dense: {nOut: 4}\n"
      "  - output: {nOut: 10}\n");
  CHECK_THAT(layer_type, StartsWith("t.yaml:3:5: "));
  CHECK_THAT(layer_type, Contains("unknown layer type 'Dense'"));
  CHECK_THAT(layer_type, Contains("did you mean 'dense'?"));
}

TEST_CASE("enum values match in any letter case", "[config][errors]") {
  // The output layer names its own activation: the top-level one would reach it, and tanh with
  // cross-entropy is refused.
  const dl::Config c = load(
      "dtype: float\nweightInit: relu_uniform\nactivation: TANH\nupdater: {type: Adam}\n"
      "inputType: {feedForward: {size: 8}}\n"
      "layers:\n  - dense: {nOut: 16}\n  - output: {nOut: 10, activation: SoftMax}\n");
  CHECK(c.dtype == dl::DType::kFloat);
  CHECK(c.weightInit == dl::WeightInit::kReluUniform);
  CHECK(c.activation == dl::Activation::kTanh);
  CHECK(c.layers[1].activation == dl::Activation::kSoftmax);
  CHECK(c.updater.type == dl::UpdaterType::kAdam);
}

TEST_CASE("HALF and BFLOAT16 need the CUDA backend", "[config][errors]") {
  const std::string half = load_error("backend: cpu\ndtype: HALF\n" + kNetwork);
  CHECK_THAT(half, StartsWith("t.yaml:2:8: "));
  CHECK_THAT(half, Contains("the CPU backend trains in FLOAT only"));
  CHECK_THAT(half, EndsWith("set dtype: FLOAT or backend: cuda"));
  CHECK_THAT(load_error("backend: cpu\ndtype: bfloat16\n" + kNetwork), Contains("FLOAT only"));
  CHECK(load("backend: cuda\ndtype: HALF\n" + kNetwork).dtype == dl::DType::kHalf);
  CHECK(load("backend: auto\ndtype: BFLOAT16\n" + kNetwork).dtype == dl::DType::kBFloat16);
  // backend: auto is the default: whether a GPU is there is decided at start.
  CHECK(load("dtype: bfloat16\n" + kNetwork).dtype == dl::DType::kBFloat16);
}

TEST_CASE("structural mistakes", "[config][errors]") {
  SECTION("duplicate key") {
    const std::string msg = load_error("epochs: 1\nseed: 3\nepochs: 2\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:3:1: duplicate key 'epochs'"));
  }
  SECTION("a layer's settings not indented under its type") {
    const std::string msg = load_error(
        "inputType: {feedForward: {size: 4}}\nlayers:\n  - dense:\n    nOut: 4\n"
        "  - output: {nOut: 10}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:3:5: layers.0 has 2 keys (dense, nOut)"));
    CHECK_THAT(msg, Contains("indent"));
  }
  SECTION("a layer written as an empty map") {
    CHECK(load_error("inputType: {feedForward: {size: 4}}\nlayers:\n  - {}\n"
                     "  - output: {nOut: 10}\n") ==
          "t.yaml:3:5: layers.0 is an empty map; a layer is one key naming its type; write each "
          "layer as '- dense: {nOut: 500}'");
  }
  SECTION("inputType with both kinds or none") {
    const std::string both = load_error(
        "inputType: {feedForward: {size: 4}, convolutionalFlat: {height: 2}}\n"
        "layers: [{output: {nOut: 10}}]\n");
    CHECK_THAT(both, StartsWith("t.yaml:1:12: "));
    CHECK_THAT(both, Contains("exactly one of convolutionalFlat or feedForward, got both"));
    const std::string none = load_error("inputType: {}\nlayers: [{output: {nOut: 10}}]\n");
    CHECK_THAT(none, Contains("got none"));
    const std::string typo =
        load_error("inputType: {feedForwrd: {size: 4}}\nlayers: [{output: {nOut: 10}}]\n");
    CHECK_THAT(typo, StartsWith("t.yaml:1:13: "));
    CHECK_THAT(typo, Contains("did you mean 'feedForward'?"));
  }
  SECTION("two layers with one name") {
    const std::string msg = load_error(
        "inputType: {feedForward: {size: 4}}\nlayers:\n  - dense: {nOut: 4, name: a}\n"
        "  - output: {nOut: 10, name: a}\n");
    CHECK_THAT(msg, StartsWith("t.yaml:4:5: layer 1 'a' (output) has the name of layer 0"));
    // A name given that an unnamed layer's default (type and index) repeats: the message says
    // which layer is unnamed, where it said "has the name of layer 0" of a name never written.
    const std::string given_first = load_error(
        "inputType: {feedForward: {size: 4}}\nlayers:\n  - dense: {nOut: 4, name: dense1}\n"
        "  - dense: {nOut: 4}\n  - output: {nOut: 10}\n");
    CHECK_THAT(given_first, StartsWith("t.yaml:4:5: layer 1 'dense1' (dense) has the name given "
                                       "to layer 0, and is itself unnamed") &&
                                Contains("name the unnamed layer, or rename the other"));
    const std::string default_first = load_error(
        "inputType: {feedForward: {size: 4}}\nlayers:\n  - dense: {nOut: 4}\n"
        "  - dense: {nOut: 4, name: dense0}\n  - output: {nOut: 10}\n");
    CHECK_THAT(default_first,
               StartsWith("t.yaml:4:5: layer 1 'dense0' (dense) has the default name of layer 0 "
                          "(its type and index), which is unnamed"));
  }
  SECTION("a cache entry larger than the cache") {
    const std::string msg = load_error(
        "memory:\n  maximumHostCacheableLength: 2GiB\n  maximumHostCache: 1GiB\n" + kNetwork);
    CHECK_THAT(msg, StartsWith("t.yaml:2:31: "));
    CHECK_THAT(msg, Contains("maximumHostCacheableLength"));
  }
  SECTION("CUDA devices") {
    CHECK_THAT(load_error("cuda: {devices: [0, 1, 0]}\n" + kNetwork),
               StartsWith("t.yaml:1:24: device 0 is listed twice"));
    CHECK_THAT(load_error("cuda: {devices: some}\n" + kNetwork),
               Contains("cuda.devices must be 'all' or a list of device indices"));
    CHECK_THAT(load_error("cuda: {devices: [-1]}\n" + kNetwork),
               Contains("cuda.devices.0 = -1 is out of range"));
  }
}
