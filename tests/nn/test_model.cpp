// The model end to end: whole-network finite-difference gradient checks (every layer type in one
// chain), the flat-buffer layout, and weight initialization statistics.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/random.hpp"
#include "nn/model.hpp"
#include "nn/weight_init.hpp"
#include "whole_model_gradient.hpp"

namespace {

using dl::Config;
using dl::CpuBackend;
using dl::Model;
using dl::testing::check_whole_model_gradient;
using dl::testing::Fixture;
using dl::testing::kBatch;

const char* kSmallNet = R"(
seed: 5
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}
layers:
  - convolution: {kernelSize: [3, 3], stride: [1, 1], nOut: 3, activation: tanh}
  - subsampling: {poolingType: max, kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 5, activation: sigmoid}
  - output: {nOut: 4, activation: softmax, lossFunction: negativeloglikelihood}
)";

const char* kNetWithDropoutAndBatchNorm = R"(
seed: 9
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 5, width: 5, channels: 1}}
layers:
  - convolution: {kernelSize: [2, 2], stride: [1, 1], nOut: 2, activation: identity}
  - batchNormalization: {}
  - subsampling: {poolingType: avg, kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 6, activation: leakyrelu}
  - dropout: {dropOut: 0.7}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

// Global pooling between the convolutions and the classifier (Keras's GlobalAveragePooling2D).
const char* kNetWithGlobalAveragePooling = R"(
seed: 11
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 5, width: 4, channels: 2}}
layers:
  - convolution: {kernelSize: [2, 2], stride: [1, 1], nOut: 3, activation: tanh}
  - globalPooling: {poolingType: avg}
  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}
)";

const char* kNetWithGlobalMaxPooling = R"(
seed: 12
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 4, width: 4, channels: 1}}
layers:
  - convolution: {kernelSize: [2, 2], stride: [1, 1], nOut: 2, activation: identity}
  - globalPooling: {poolingType: max}
  - dense: {nOut: 4, activation: tanh}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

// Activation layers (conv -> batch normalization -> GELU), and activations whose gradient reads
// the pre-activation on a convolution followed by pooling (which then runs unfused) and on a
// dense layer.
constexpr const char* kNetWithActivationLayers = R"(
seed: 9
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 1}}
layers:
  - activation: {activation: tanh}
  - convolution: {kernelSize: [3, 3], stride: [1, 1], nOut: 2, activation: identity}
  - batchNormalization: {}
  - activation: {activation: gelu}
  - convolution: {kernelSize: [2, 2], stride: [1, 1], nOut: 3, activation: silu}
  - subsampling: {poolingType: avg, kernelSize: [2, 2], stride: [1, 1]}
  - activation: {activation: elu}
  - dense: {nOut: 4, activation: hardswish}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

}  // namespace

TEST_CASE("whole-model gradient matches finite differences (conv, max pool, dense, softmax NLL)") {
  check_whole_model_gradient(kSmallNet);
}

TEST_CASE(
    "whole-model gradient matches finite differences (batch norm, avg pool, dropout, mcxent)") {
  check_whole_model_gradient(kNetWithDropoutAndBatchNorm);
}

TEST_CASE("whole-model gradient matches finite differences (activation layers, GELU, SiLU, ELU, "
          "hardswish)") {
  check_whole_model_gradient(kNetWithActivationLayers);
}

TEST_CASE("whole-model gradient matches finite differences (global average and max pooling)") {
  check_whole_model_gradient(kNetWithGlobalAveragePooling);
  check_whole_model_gradient(kNetWithGlobalMaxPooling);
}

TEST_CASE("global pooling gives each channel's mean or maximum over its whole plane") {
  for (const char* type : {"avg", "max"}) {
    const std::string yaml = std::string(R"(
inputType: {convolutionalFlat: {height: 2, width: 3, channels: 2}}
layers:
  - globalPooling: {poolingType: )") +
                             type + R"(}
  - output: {nOut: 2, activation: identity, lossFunction: mse}
)";
    const Config config = dl::load_config_string(yaml, "global.yaml");
    CpuBackend backend;
    Model model(config, backend, 1);
    // The output layer passes the pooled values through: W = identity, b = 0.
    const std::vector<float> identity{1, 0, 0, 1, 0, 0};
    REQUIRE(model.parameter_count() == identity.size());
    model.upload_parameters(identity.data());
    const std::vector<float> image{1, 2, 3, 4, 5, 9, -1, -2, -3, -4, -5, -6};
    backend.upload(model.input(), image.data(), image.size() * sizeof(float));
    dl::StepContext inference;
    model.forward(1, inference);
    const float* pooled = model.output();
    const bool avg = std::string(type) == "avg";
    CHECK(pooled[0] == Approx(avg ? 4.0 : 9.0));
    CHECK(pooled[1] == Approx(avg ? -3.5 : -1.0));
  }
}

TEST_CASE("LeNet has DL4J's parameter count and a flat layout of weights then biases") {
  const Config config = dl::load_config_string(R"(
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {kernelSize: [5, 5], stride: [1, 1], nOut: 20, activation: identity}
  - subsampling: {poolingType: max, kernelSize: [2, 2], stride: [2, 2]}
  - convolution: {kernelSize: [5, 5], stride: [1, 1], nOut: 50, activation: identity}
  - subsampling: {poolingType: max, kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 500, activation: relu}
  - output: {nOut: 10, activation: softmax, lossFunction: negativeloglikelihood}
)",
                                               "lenet.yaml");
  CpuBackend backend;
  Model model(config, backend, 4);
  // conv1 20*1*25+20, conv2 50*20*25+50, dense 800*500+500, output 500*10+10
  CHECK(model.parameter_count() == 520u + 25050u + 400500u + 5010u);
  CHECK(model.signature() ==
        "convolution:520,subsampling:0,convolution:25050,subsampling:0,dense:400500,output:5010");
  const auto& segments = model.segments();
  REQUIRE(segments.size() == 8);
  CHECK(segments[0].offset == 0);
  CHECK(segments[0].count == 500);
  CHECK_FALSE(segments[0].bias_like);
  CHECK(segments[1].offset == 500);
  CHECK(segments[1].bias_like);
  CHECK(segments[7].offset + segments[7].count == model.parameter_count());
}

TEST_CASE("weight initialization follows DL4J's definitions") {
  constexpr std::size_t kCount = 200000;
  std::vector<float> w(kCount);
  auto moments = [&](double* mean, double* stddev, double* max_abs) {
    double s = 0, s2 = 0, m = 0;
    for (float v : w) {
      s += v;
      s2 += double(v) * v;
      m = std::max(m, std::fabs(double(v)));
    }
    *mean = s / kCount;
    *stddev = std::sqrt(s2 / kCount - *mean * *mean);
    *max_abs = m;
  };
  const double fan_in = 800, fan_out = 500;
  double mean, stddev, max_abs;
  dl::RandomStream rng(1, 2);

  dl::initialize_weights(dl::WeightInit::kXavier, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(std::fabs(mean) < 1e-3);
  CHECK(stddev == Approx(std::sqrt(2.0 / (fan_in + fan_out))).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kXavierUniform, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  CHECK(max_abs <= limit);
  CHECK(stddev == Approx(limit / std::sqrt(3.0)).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kRelu, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(stddev == Approx(std::sqrt(2.0 / fan_in)).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kReluUniform, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(max_abs <= std::sqrt(6.0 / fan_in));
  CHECK(stddev == Approx(std::sqrt(6.0 / fan_in) / std::sqrt(3.0)).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kNormal, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(stddev == Approx(1.0 / std::sqrt(fan_in)).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kUniform, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(max_abs <= 1.0 / std::sqrt(fan_in));
  CHECK(stddev == Approx(1.0 / std::sqrt(fan_in) / std::sqrt(3.0)).epsilon(0.01));

  dl::initialize_weights(dl::WeightInit::kZero, fan_in, fan_out, w.data(), kCount, rng);
  moments(&mean, &stddev, &max_abs);
  CHECK(max_abs == 0.0);
}

TEST_CASE("the same seed gives the same initial parameters; another seed does not") {
  const Config config = dl::load_config_string(kSmallNet, "small.yaml");
  CpuBackend backend;
  Model a(config, backend, 2), b(config, backend, 2);
  a.initialize(11);
  b.initialize(11);
  const std::size_t n = a.parameter_count();
  CHECK(std::equal(a.parameters(), a.parameters() + n, b.parameters()));
  b.initialize(12);
  CHECK_FALSE(std::equal(a.parameters(), a.parameters() + n, b.parameters()));
}

TEST_CASE("signature_difference names the first layer where two networks part", "[nn]") {
  CHECK(dl::signature_difference("convolution:520,dense:1824,output:50",
                                 "convolution:520,dense:1881,output:50") ==
        "layers.1: dense with 1824 parameters -> dense with 1881 parameters");
  CHECK(dl::signature_difference("dense:10,output:50", "dense:10,output:50,output:4") ==
        "2 layers -> 3");
  CHECK(dl::signature_difference("dense:10", "dense:10") == "dense:10 -> dense:10");
}
