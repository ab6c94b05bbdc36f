// configs/cifar10.yaml is the seed's Keras network: the parameter count of each layer equals
// Keras's model.summary() (896, 18,496, 262,208 and 650: 282,250 in all), and its weights start
// as Keras's glorot_uniform with zero biases; a 3-channel forward pass keeps the NCHW layout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "nn/model.hpp"

namespace {

std::string cifar10_config() {
  return std::string(DL_SOURCE_DIR) + "/configs/cifar10.yaml";
}

}  // namespace

TEST_CASE("configs/cifar10.yaml: Keras's parameter counts, 282,250 in all", "[nn][keras]") {
  const dl::Config config = dl::load_config_file(cifar10_config());
  const auto layers = dl::build_layers(dl::plan_layers(config));
  std::vector<std::size_t> counts;
  for (const auto& layer : layers) counts.push_back(layer->parameter_count());
  CHECK(counts == std::vector<std::size_t>{896, 0, 18496, 0, 262208, 650});
  CHECK_THAT(dl::layer_table(config), Catch::Matchers::Contains("total parameters: 282250"));
  CHECK(layers[1]->plan().output.str() == "32x16x16");
  CHECK(layers[3]->plan().output.str() == "64x8x8");
}

TEST_CASE("configs/cifar10.yaml: glorot_uniform weights, zero biases", "[nn][keras]") {
  const dl::Config config = dl::load_config_file(cifar10_config());
  dl::CpuBackend backend;
  dl::Model model(config, backend, 2);
  model.initialize(config.seed);
  std::vector<float> params(model.parameter_count());
  model.download_parameters(params.data());
  // Keras: limit = sqrt(6 / (fan_in + fan_out)), fans of a convolution counted with its kernel.
  const double limits[] = {std::sqrt(6.0 / (3 * 9 + 32 * 9)), std::sqrt(6.0 / (32 * 9 + 64 * 9)),
                           std::sqrt(6.0 / (4096 + 64)), std::sqrt(6.0 / (64 + 10))};
  std::size_t weight = 0;
  for (const dl::ParameterSegment& s : model.segments()) {
    const float* v = params.data() + s.offset;
    if (s.bias_like) {
      for (std::size_t i = 0; i < s.count; ++i) REQUIRE(v[i] == 0.0f);
      continue;
    }
    const double limit = limits[weight++];
    double largest = 0.0;
    for (std::size_t i = 0; i < s.count; ++i) largest = std::max(largest, std::fabs(double(v[i])));
    INFO("weights " << weight << ": largest " << largest << ", limit " << limit);
    CHECK(largest <= limit);
    CHECK(largest > 0.9 * limit);  // uniform over the whole range, not a narrower one
  }
  CHECK(weight == 4);
}

TEST_CASE("3-channel forward: each channel plane reaches its own filter weights", "[nn][keras]") {
  const dl::Config config = dl::load_config_string(
      "inputType: {convolutionalFlat: {height: 2, width: 2, channels: 3}}\n"
      "layers:\n"
      "  - convolution: {nOut: 1, kernelSize: 1, stride: 1, activation: identity}\n"
      "  - output: {nOut: 2, activation: identity, lossFunction: mse}\n",
      "t.yaml");
  dl::CpuBackend backend;
  dl::Model model(config, backend, 1);
  // Convolution weights [out=1][in=3][1][1] = 1, 10, 100, bias 0; output: identity-like.
  std::vector<float> params = {1, 10, 100, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  REQUIRE(params.size() == model.parameter_count());
  model.upload_parameters(params.data());
  // NCHW: the red plane, then green, then blue.
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  backend.upload(model.input(), image.data(), image.size() * sizeof(float));
  model.forward(1, dl::StepContext{});
  std::vector<float> out(2);
  backend.download(out.data(), model.output(), out.size() * sizeof(float));
  // Output unit 0 reads the convolution's first pixel: 1*1 + 10*5 + 100*9.
  CHECK(out[0] == 951.0f);
}

// The shipped graph networks: the trainable count equals what PyTorch prints for the same network
// (bench/pytorch_resnet.py --count), and each block's add reads its two branches.
TEST_CASE("configs/resnet20 and resnet18: PyTorch's trainable counts", "[nn][graph]") {
  const std::pair<const char*, const char*> cases[] = {
      {"/configs/resnet20-cifar10.yaml", "trainable parameters: 272474 "},
      {"/configs/resnet18-cifar10.yaml", "trainable parameters: 11173962 "},
      {"/configs/cifar10-fast.yaml", "trainable parameters: 1972792 "}};
  for (const auto& [file, count] : cases) {
    INFO(file);
    const dl::Config config = dl::load_config_file(std::string(DL_SOURCE_DIR) + file);
    CHECK_THAT(dl::layer_table(config), Catch::Matchers::Contains(count));
  }
  const dl::Config resnet20 =
      dl::load_config_file(std::string(DL_SOURCE_DIR) + "/configs/resnet20-cifar10.yaml");
  const auto plan = dl::plan_layers(resnet20);
  int adds = 0;
  for (const dl::PlannedLayer& p : plan) {
    if (p.config.type != dl::LayerType::kAdd) continue;
    ++adds;
    REQUIRE(p.inputs.size() == 2);
    CHECK(p.inputs[0] == p.inputs[1]);
  }
  CHECK(adds == 9);  // 3 stages x 3 blocks
  CHECK(plan.back().input.str() == "64x1x1");
}

TEST_CASE("the layer table widens its name and inputs columns for long names", "[nn]") {
  // Keras's default names reach 22 characters ('batch_normalization_12'), which the 22-wide name
  // column printed against the type ('batch_normalization_12batchNormalization').
  const dl::Config config = dl::load_config_string(
      "inputType: {convolutionalFlat: {height: 8, width: 8, channels: 1}}\n"
      "layers:\n"
      "  - convolution: {name: conv2d_12, nOut: 2, kernelSize: 3}\n"
      "  - batchNormalization: {name: batch_normalization_12}\n"
      "  - convolution: {name: shortcut_convolution_12, inputs: input, nOut: 2, kernelSize: 3}\n"
      "  - add: {name: s, inputs: [batch_normalization_12, shortcut_convolution_12]}\n"
      "  - output: {nOut: 10}\n",
      "t.yaml");
  const std::string table = dl::layer_table(config);
  CHECK_THAT(table, Catch::Matchers::Contains("batch_normalization_12   batchNormalization"));
  CHECK_THAT(table, Catch::Matchers::Contains(
                        "batch_normalization_12, shortcut_convolution_12  2x6x6"));
  // Every row takes the widened columns (25: the longest name and two blanks).
  CHECK_THAT(table, Catch::Matchers::Contains("0   conv2d_12                convolution"));
}

TEST_CASE("layer table: a thousand layers widen the index column, one long list its own row",
          "[nn][graph]") {
  std::string yaml = "inputType: {feedForward: {size: 4}}\nlayers:\n";
  for (int i = 0; i < 1000; ++i) yaml += "  - activation: {activation: relu}\n";
  yaml += "  - add: {name: sum, inputs: [";
  for (int i = 0; i < 40; ++i) yaml += (i > 0 ? ", " : "") + std::string("activation999");
  yaml += "]}\n  - output: {nOut: 3}\n";
  const std::string table = dl::layer_table(dl::load_config_string(yaml, "t.yaml"));
  // The index ran into the name ('1000activation1000').
  CHECK_THAT(table, Catch::Matchers::Contains("\n999   activation999 "));
  CHECK_THAT(table, Catch::Matchers::Contains("\n1001  output1001 "));
  // The 40 inputs (598 characters) run past their column in the sum's row alone.
  CHECK_THAT(table, Catch::Matchers::Contains("\n1000  sum "));
  std::istringstream rows(table);
  std::size_t longest = 0, long_rows = 0;
  for (std::string row; std::getline(rows, row);) {
    longest = std::max(longest, row.size());
    long_rows += row.size() > 200 ? 1 : 0;
  }
  CHECK(longest > 598);
  CHECK(long_rows == 1);
}
