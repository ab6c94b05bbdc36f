// Layers without bias (hasBias: false on convolution, dense and output): no bias parameters, the
// products of a layer whose bias is zero, a whole-model gradient check with batch normalization
// after a bias-free convolution, and batch normalization's parameters regularized as biases.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "whole_model_gradient.hpp"

namespace {

using dl::testing::check_whole_model_gradient;
using dl::testing::Fixture;
using dl::testing::kBatch;

std::string network(const char* has_bias) {
  return std::string(R"(
seed: 31
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}
layers:
  - convolution: {kernelSize: [3, 3], nOut: 3, activation: tanh, hasBias: )") +
         has_bias + R"(}
  - dense: {nOut: 4, activation: tanh, hasBias: )" + has_bias + R"(}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";
}

}  // namespace

TEST_CASE("hasBias false: no bias parameters, and the products of a zero bias",
          "[nn][bias]") {
  Fixture with(network("true").c_str());
  Fixture without(network("false").c_str());
  // conv 3*2*9 (+3), dense 48*4 (+4), output 4*3+3
  CHECK(with.model.parameter_count() == 54u + 3u + 192u + 4u + 15u);
  CHECK(without.model.parameter_count() == 54u + 192u + 15u);
  CHECK(without.model.segments().size() == 4);  // conv W, dense W, output W and b
  for (const dl::ParameterSegment& s : without.model.segments())
    CHECK(s.bias_like == (s.count == 3u && s.offset == 54u + 192u + 12u));
  // The same weights (biases start at zero): the same loss and weight gradients, bit for bit.
  std::vector<float> host(with.model.parameter_count());
  with.model.download_parameters(host.data());
  std::vector<float> bias_free;
  bias_free.insert(bias_free.end(), host.begin(), host.begin() + 54);
  bias_free.insert(bias_free.end(), host.begin() + 57, host.begin() + 57 + 192);
  bias_free.insert(bias_free.end(), host.begin() + 253, host.end());
  REQUIRE(bias_free.size() == without.model.parameter_count());
  without.model.upload_parameters(bias_free.data());
  CHECK(with.loss() == without.loss());
  with.model.backward(kBatch, 1.0f);
  without.model.backward(kBatch, 1.0f);
  const float* g = with.model.gradients();
  const float* h = without.model.gradients();
  CHECK(std::vector<float>(g, g + 54) == std::vector<float>(h, h + 54));
  CHECK(std::vector<float>(g + 57, g + 57 + 192) == std::vector<float>(h + 54, h + 54 + 192));
}

TEST_CASE("hasBias false: whole-model gradient, batch normalization after the convolution",
          "[nn][bias]") {
  check_whole_model_gradient(R"(
seed: 32
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 7, width: 7, channels: 2}}
layers:
  - convolution: {kernelSize: [3, 3], nOut: 3, activation: identity, hasBias: false}
  - batchNormalization: {}
  - activation: {activation: tanh}
  - dense: {nOut: 4, activation: tanh, hasBias: false}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent, hasBias: false}
)");
}

TEST_CASE("batch normalization's scale and shift are regularized as biases", "[nn][bias]") {
  Fixture f(R"(
inputType: {convolutionalFlat: {height: 4, width: 4, channels: 2}}
layers:
  - batchNormalization: {}
  - output: {nOut: 3}
)");
  const auto& s = f.model.segments();
  REQUIRE(s.size() == 5);
  CHECK((s[0].bias_like && s[0].trainable));      // gamma
  CHECK((s[1].bias_like && s[1].trainable));      // beta
  CHECK_FALSE(s[2].trainable);                    // running mean and variance
  CHECK_FALSE(s[3].bias_like);                    // output weights
  CHECK(s[4].bias_like);
}

// A batch of one sample gives batch normalization over features one value per channel: its
// variance 0 pulled the running variance towards 0 (an epoch's last partial batch, or a worker's
// share of one), which evaluation then divides by. The running statistics stay as they were.
TEST_CASE("batch normalization over features keeps its running statistics on a batch of one",
          "[nn][bias]") {
  const char* yaml = R"(
seed: 5
inputType: {feedForward: {size: 6}}
layers:
  - dense: {nOut: 4, activation: identity}
  - batchNormalization: {decay: 0.5}
  - output: {nOut: 3}
)";
  for (const int batch : {1, 2}) {
    INFO("batch " << batch);
    Fixture f(yaml, batch);
    const auto& s = f.model.segments();
    REQUIRE_FALSE(s[4].trainable);  // dense W, b, gamma, beta, then the running statistics
    const float* running = f.model.parameters() + s[4].offset;
    const std::vector<float> before(running, running + s[4].count);
    f.loss();
    const std::vector<float> after(running, running + s[4].count);
    if (batch == 1)
      CHECK(after == before);
    else
      CHECK(after != before);
  }
}
