// The layer registry: every kind declared once, found by its name, with a shape rule that gives
// the shapes a test table expects (a kind added without an entry here fails), and the one window
// geometry rule.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "nn/layer.hpp"
#include "nn/layer_plan.hpp"
#include "nn/layer_registry.hpp"
#include "nn/spatial_geometry.hpp"

using Catch::Matchers::Contains;

namespace {

// A network of one layer of `kind` (with `settings`) on a 2x6x6 image, then the output layer.
dl::Config network_with(const std::string& kind, const std::string& settings) {
  return dl::load_config_string(
      "inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}\n"
      "layers:\n  - " +
          kind + ": " + settings + "\n  - output: {nOut: 3}\n",
      "registry.yaml");
}

// What each kind makes of a 2x6x6 input with the settings given.
struct ShapeCase {
  std::string settings;
  std::string output;  // SampleShape::str()
  int nin = 0;
};

const std::map<std::string, ShapeCase>& expected_shapes() {
  static const std::map<std::string, ShapeCase> cases{
      {"convolution", {"{nOut: 4, kernelSize: 3}", "4x4x4", 2}},
      {"subsampling", {"{kernelSize: 2, stride: 2}", "2x3x3", 2}},
      {"dense", {"{nOut: 5}", "5", 72}},
      {"output", {"{nOut: 7}", "7", 72}},
      {"dropout", {"{dropOut: 0.5}", "2x6x6", 2}},
      {"batchNormalization", {"{}", "2x6x6", 2}},
      {"globalPooling", {"{poolingType: avg}", "2x1x1", 2}},
      {"activation", {"{}", "2x6x6", 2}},
      {"add", {"{inputs: [input, input]}", "2x6x6", 2}},
      {"concat", {"{inputs: [input, input]}", "4x6x6", 2}},
  };
  return cases;
}

}  // namespace

TEST_CASE("Layer registry: every kind once, found by its name, in the documented order",
          "[nn][registry]") {
  std::set<std::string> names;
  std::set<dl::LayerType> types;
  for (const dl::LayerKind& kind : dl::layer_kinds()) {
    INFO(std::string(kind.name));
    CHECK(names.insert(std::string(kind.name)).second);
    CHECK(types.insert(kind.type).second);
    CHECK(dl::find_layer_kind(kind.name) == &kind);
    CHECK(&dl::layer_kind(kind.type) == &kind);
    CHECK(kind.defaults.type == kind.type);
    REQUIRE_FALSE(kind.keys.empty());
    CHECK(kind.keys.front().key == "name");
    CHECK(kind.shape != nullptr);
    CHECK(kind.make != nullptr);
  }
  CHECK(dl::layer_kind_names().front() == "convolution");
  CHECK(dl::find_layer_kind("Convolution") == nullptr);  // spelled exactly
  CHECK(dl::default_layer_name(dl::LayerType::kBatchNormalization, 3) == "batchNormalization3");
}

TEST_CASE("Layer registry: an unknown layer kind names the closest one or lists them all",
          "[nn][registry]") {
  CHECK_THROWS_WITH(network_with("convolutoin", "{nOut: 4}"),
                    Contains("registry.yaml:3:5: unknown layer type 'convolutoin' in layers.0") &&
                        Contains("did you mean 'convolution'?"));
  CHECK_THROWS_WITH(network_with("lstm", "{nOut: 4}"),
                    Contains("unknown layer type 'lstm'") &&
                        Contains("use one of: convolution, subsampling, dense, output, dropout, "
                                 "batchNormalization, globalPooling, activation, add, concat"));
}

TEST_CASE("Layer registry: a key another kind takes is refused with the kind's own keys",
          "[nn][registry]") {
  CHECK_THROWS_WITH(network_with("dropout", "{nOut: 4}"),
                    Contains("unknown key 'nOut' in layers.0 (dropout)"));
  CHECK_THROWS_WITH(network_with("dense", "{kernelSize: 2}"),
                    Contains("unknown key 'kernelSize' in layers.0 (dense)"));
  CHECK_THROWS_WITH(network_with("batchNormalization", "{hasBias: false}"),
                    Contains("unknown key 'hasBias' in layers.0 (batchNormalization)"));
}

TEST_CASE("Layer registry: each kind's shape rule", "[nn][registry]") {
  for (const dl::LayerKind& kind : dl::layer_kinds()) {
    const std::string name(kind.name);
    INFO(name);
    const auto expected = expected_shapes().find(name);
    REQUIRE(expected != expected_shapes().end());  // a new kind needs its case above
    if (kind.type == dl::LayerType::kOutput) {
      // The last layer of a network is the output layer: plan it alone.
      const dl::Config c = dl::load_config_string(
          "inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}\nlayers: [{output: " +
              expected->second.settings + "}]\n",
          "registry.yaml");
      const auto plan = dl::plan_layers(c);
      CHECK(plan[0].output.str() == expected->second.output);
      CHECK(plan[0].config.nIn == expected->second.nin);
      continue;
    }
    const dl::Config c = network_with(name, expected->second.settings);
    const auto plan = dl::plan_layers(c);
    REQUIRE(plan.size() == 2);
    CHECK(plan[0].input.str() == "2x6x6");
    CHECK(plan[0].output.str() == expected->second.output);
    CHECK(plan[0].config.nIn == expected->second.nin);
    CHECK(plan[0].activation == kind.default_activation.value_or(dl::Activation::kIdentity));
    const auto layer = kind.make(plan[0], 0);
    CHECK(layer->plan().config.type == kind.type);
    CHECK(layer->output_size() == plan[0].output.size());
  }
}

TEST_CASE("Window geometry: Truncate and Same output sizes and padding", "[nn][geometry]") {
  using dl::ConvolutionMode;
  const auto truncate = dl::window_extent(28, 5, 1, 0, ConvolutionMode::kTruncate);
  REQUIRE(truncate);
  CHECK(truncate->out == 24);
  CHECK(truncate->pad_before == 0);
  const auto padded = dl::window_extent(7, 3, 2, 1, ConvolutionMode::kTruncate);
  REQUIRE(padded);
  CHECK(padded->out == 4);  // (7 + 2 - 3) / 2 + 1
  CHECK(padded->pad_before == 1);
  CHECK_FALSE(dl::window_extent(4, 7, 1, 1, ConvolutionMode::kTruncate));  // 7 > 4 + 2
  // Same: ceil(in / stride); total padding (out-1)*stride + k - in, the smaller half first.
  const auto same = dl::window_extent(6, 4, 1, 0, ConvolutionMode::kSame);
  REQUIRE(same);
  CHECK(same->out == 6);
  CHECK(same->pad_before == 1);  // total 3: 1 before, 2 after
  const auto strided = dl::window_extent(7, 3, 2, 5, ConvolutionMode::kSame);
  REQUIRE(strided);
  CHECK(strided->out == 4);
  CHECK(strided->pad_before == 1);  // total (4-1)*2 + 3 - 7 = 2; padding is ignored
}

TEST_CASE("Window geometry: the backend geometry of a planned layer", "[nn][geometry]") {
  const dl::Config c =
      network_with("convolution", "{nOut: 4, kernelSize: [3, 2], stride: [2, 1], padding: [1, 0]}");
  const auto plan = dl::plan_layers(c);
  const dl::Conv2dGeometry g = dl::conv2d_geometry(plan[0], 8);
  CHECK(g.batch == 8);
  CHECK(g.in_channels == 2);
  CHECK(g.in_height == 6);
  CHECK(g.out_channels == 4);
  CHECK(g.out_height == 3);  // (6 + 2 - 3) / 2 + 1
  CHECK(g.out_width == 5);   // (6 - 2) / 1 + 1
  CHECK(g.kernel_height == 3);
  CHECK(g.kernel_width == 2);
  CHECK(g.stride_height == 2);
  CHECK(g.pad_top == 1);
  CHECK(g.pad_left == 0);
}

TEST_CASE("Layer registry: labelSmoothing only where softmax with cross-entropy takes it",
          "[nn][registry]") {
  const auto output_only = [](const std::string& settings) {
    return dl::load_config_string(
        "inputType: {convolutionalFlat: {height: 2, width: 2, channels: 1}}\n"
        "layers:\n  - output: " +
            settings + "\n",
        "smoothing.yaml");
  };
  const dl::Config smoothed = output_only("{nOut: 3, labelSmoothing: 0.2}");
  CHECK(dl::plan_layers(smoothed).back().config.labelSmoothing == 0.2);
  CHECK_THROWS_WITH(output_only("{nOut: 3, activation: sigmoid, labelSmoothing: 0.1}"),
                    Contains("smoothing.yaml:3:5") &&
                        Contains("labelSmoothing smooths the targets of softmax with "
                                 "cross-entropy only"));
  CHECK_THROWS_WITH(output_only("{nOut: 3, lossFunction: mse, labelSmoothing: 0.1}"),
                    Contains("remove labelSmoothing"));
  CHECK_THROWS_WITH(output_only("{nOut: 3, labelSmoothing: 1}"),
                    Contains("labelSmoothing") && Contains("[0, 1)"));
}

// A top-level `activation: relu` (DL4J's builder default for every layer) used to reach an output
// layer that set none: relu with negativeloglikelihood trained a network to chance accuracy, its
// loss falling all the same, without a word.
TEST_CASE("Layer registry: cross-entropy only after softmax", "[nn][registry]") {
  const auto network = [](const std::string& top, const std::string& output) {
    return dl::load_config_string(top +
                                      "inputType: {feedForward: {size: 4}}\n"
                                      "layers:\n  - dense: {nOut: 3}\n  - output: " +
                                      output + "\n",
                                  "loss.yaml");
  };
  CHECK_THROWS_WITH(network("activation: relu\n", "{nOut: 3}"),
                    Contains("loss.yaml:5:5: layer 1 'output1' (output): lossFunction "
                             "negativeloglikelihood needs class probabilities") &&
                        Contains("activation is relu (the top-level activation, taken where the "
                                 "layer sets none)") &&
                        Contains("set activation: softmax on the output layer"));
  for (const char* activation : {"sigmoid", "identity", "tanh", "gelu"}) {
    const std::string set =
        std::string("{nOut: 3, lossFunction: mcxent, activation: ") + activation + "}";
    CHECK_THROWS_WITH(network("", set), Contains(std::string("activation is ") + activation +
                                                 ": it would train to chance"));
  }
  // Softmax, given or the output layer's own default under a top-level one, and mse after any.
  CHECK(dl::plan_layers(network("activation: relu\n", "{nOut: 3, activation: softmax}"))
            .back()
            .activation == dl::Activation::kSoftmax);
  CHECK(dl::plan_layers(network("", "{nOut: 3}")).back().activation == dl::Activation::kSoftmax);
  CHECK(dl::plan_layers(network("activation: tanh\n", "{nOut: 3, lossFunction: mse}"))
            .back()
            .activation == dl::Activation::kTanh);
}
