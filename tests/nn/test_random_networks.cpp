// Networks no test names: random_network.hpp's graphs (residual blocks, branches, concat, skips
// from far up, every activation, both orders of batch normalization and its activation) on the
// CPU backend. Each must compute the gradient of its loss (finite differences, kinks allowed
// for), the same bits on 1 and 2 threads, and the same bits when the step is taken again (no
// buffer that an in-place layer or a gradient route leaves stale).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "random_network.hpp"
#include "same_bits.hpp"
#include "whole_model_gradient.hpp"

namespace {

using dl::testing::Fixture;
using dl::testing::random_network;
using dl::testing::same_bits;

// Networks per run (random_network_count: more for a longer search).
constexpr unsigned kNetworks = 40;
constexpr std::size_t kParametersPerSegment = 12;
// Samples per step: batch normalization of a vector over 3 samples (the chain tests' batch) is so
// curved where two of them nearly meet that a finite difference measures the curve.
constexpr int kBatch = 8;
// Samples per step where the thread counts are compared: enough for several tasks per op
// (convolution partials over samples among them), which kBatch is not (backends_cpu_variant.cpp).
constexpr int kThreadsBatch = 64;

struct Step {
  double loss = 0.0;
  std::vector<float> gradients;
  std::vector<float> output;
};

Step take_step(Fixture& f) {
  Step s;
  s.loss = f.loss();
  f.model.backward(f.batch, 1.0f);
  s.gradients.assign(f.model.gradients(), f.model.gradients() + f.model.parameter_count());
  const std::size_t outputs = static_cast<std::size_t>(f.batch) * f.model.num_classes();
  s.output.assign(f.model.output(), f.model.output() + outputs);
  return s;
}


}  // namespace

TEST_CASE("random networks: the backward pass is the gradient of the loss", "[nn][graph]") {
  for (unsigned seed = 1; seed <= dl::testing::random_network_count(kNetworks); ++seed) {
    const dl::testing::RandomNetwork net = random_network(seed, dl::testing::NetworkKind::kSmooth);
    INFO("network of seed " << seed << ":\n" << net.yaml);
    dl::testing::check_gradient_across_kinks(net.yaml, kBatch, kParametersPerSegment);
  }
}

TEST_CASE("random networks: the same bits on 1 and 2 threads, and when the step is repeated",
          "[nn][graph]") {
  for (unsigned seed = 1; seed <= dl::testing::random_network_count(kNetworks); ++seed) {
    const dl::testing::RandomNetwork net = random_network(seed);
    INFO("network of seed " << seed << ":\n" << net.yaml);
    Fixture f(net.yaml.c_str(), kThreadsBatch);
    dl::set_cpu_threads(1);
    const Step one = take_step(f);
    const Step again = take_step(f);
    dl::set_cpu_threads(2);
    const Step two = take_step(f);
    dl::set_cpu_threads(1);
    CHECK(one.loss == again.loss);
    CHECK(same_bits(one.gradients, again.gradients));
    CHECK(same_bits(one.output, again.output));
    CHECK(one.loss == two.loss);
    CHECK(same_bits(one.gradients, two.gradients));
    CHECK(same_bits(one.output, two.output));
  }
}

// For a developer narrowing down a failing network: `DL_GRADIENT_CHECK_CONFIG=net.yaml test_nn
// "[.check-config]"` checks the gradient of any config file's network (not run by default).
TEST_CASE("random networks: the gradient of the network in DL_GRADIENT_CHECK_CONFIG",
          "[.check-config]") {
  const char* path = std::getenv("DL_GRADIENT_CHECK_CONFIG");
  REQUIRE(path != nullptr);
  std::ifstream file(path);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  dl::testing::check_gradient_across_kinks(text.str(), kBatch, kParametersPerSegment);
}
