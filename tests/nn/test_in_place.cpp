// Layers that write their output over their input's buffer (Model::plan_in_place): which ones the
// model picks, and that the gradients through them are still right (whole-model finite
// differences through every in-place layer, with a convolution in front so that the input
// gradients the in-place layers hand on are checked too).
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "whole_model_gradient.hpp"

namespace {

using dl::testing::check_whole_model_gradient;
using dl::testing::Fixture;

// A residual block as ResNet writes it, and next to it the cases that must not run in place. ACT
// is ReLU where the plan is checked and tanh for the finite differences (whose step would cross
// ReLU's kink in batch-normalized values near zero); both have their gradient from the output.
constexpr const char* kBlocks = R"(
seed: 21
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 5, width: 5, channels: 2}}
layers:
  - convolution: {name: stem, kernelSize: [3, 3], padding: [1, 1], nOut: 3, activation: tanh}
  - convolution: {name: c1, kernelSize: [3, 3], padding: [1, 1], nOut: 3, activation: identity, hasBias: false}
  - batchNormalization: {name: bn1}
  - activation: {name: relu1, activation: ACT}
  - convolution: {name: c2, kernelSize: [3, 3], padding: [1, 1], nOut: 3, activation: identity, hasBias: false}
  - batchNormalization: {name: bn2}
  - add: {name: sum, inputs: [bn2, stem], activation: ACT}
  - activation: {name: after_add, activation: sigmoid}
  - batchNormalization: {name: bn3}
  - activation: {name: gelu, activation: gelu}
  - batchNormalization: {name: bn4, inputs: gelu}
  - activation: {name: tanh_of_bn4, activation: tanh}
  - concat: {name: both, inputs: [tanh_of_bn4, bn4]}
  - activation: {name: after_concat, activation: ACT}
  - globalPooling: {name: pool, poolingType: avg}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

std::string blocks(const std::string& activation) {
  std::string yaml = kBlocks;
  for (std::size_t at = yaml.find("ACT"); at != std::string::npos; at = yaml.find("ACT", at))
    yaml.replace(at, 3, activation);
  return yaml;
}

std::size_t index_of(const Fixture& f, const std::string& name) {
  for (std::size_t i = 0; i < f.model.layer_count(); ++i)
    if (f.model.layer(i).name() == name) return i;
  FAIL("no layer " << name);
  return 0;
}

}  // namespace

TEST_CASE("in place: a ReLU after batch normalization and a residual sum into its branch",
          "[nn][in_place]") {
  const std::string yaml = blocks("relu");
  Fixture f(yaml.c_str());
  // bn1 and bn2 do not read their outputs in their backward pass and have one reader each.
  CHECK(f.model.runs_in_place(index_of(f, "relu1")));
  CHECK(f.model.runs_in_place(index_of(f, "sum")));
  // The sum's ReLU reads the sum's output: the sigmoid after it may not overwrite it.
  CHECK_FALSE(f.model.runs_in_place(index_of(f, "after_add")));
  // GELU's gradient reads its input, which overwriting would destroy; but bn3, its only input,
  // computes it (Model::batchnorm_fusions), and the backward pass recomputes that input.
  CHECK(f.model.runs_in_place(index_of(f, "gelu")));
  // bn4 is read twice (tanh_of_bn4 and the concat).
  CHECK_FALSE(f.model.runs_in_place(index_of(f, "tanh_of_bn4")));
  // A concat's backward reads only dy: the ELU after it may overwrite it.
  CHECK(f.model.runs_in_place(index_of(f, "after_concat")));
  // The first convolution reads the data, which evaluation reads again: never overwritten.
  CHECK_FALSE(f.model.runs_in_place(0));
  // An in-place layer's output is its input's buffer.
  const std::size_t relu1 = index_of(f, "relu1");
  CHECK(f.model.layer(relu1).output() == f.model.layer(relu1 - 1).output());
  CHECK(f.model.layer(index_of(f, "gelu")).output() == f.model.layer(index_of(f, "bn3")).output());
}

TEST_CASE("in place: whole-model gradient through in-place layers matches finite differences",
          "[nn][in_place]") {
  const std::string yaml = blocks("tanh");
  {
    Fixture f(yaml.c_str());
    REQUIRE(f.model.runs_in_place(index_of(f, "relu1")));
    REQUIRE(f.model.runs_in_place(index_of(f, "sum")));
  }
  check_whole_model_gradient(yaml.c_str());
}
