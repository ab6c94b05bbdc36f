// Networks as graphs, end to end on the CPU backend: whole-model finite-difference checks through
// fan-out (gradients summed where one output feeds several layers), add, concat, a branch from
// the network's input and a convolution whose pooling cannot be fused because another layer reads
// it; and a chain written with explicit inputs computing the chain's very bits.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "nn/gradient_slots.hpp"
#include "nn/layer_plan.hpp"
#include "whole_model_gradient.hpp"

namespace {

using dl::testing::check_whole_model_gradient;
using dl::testing::Fixture;
using dl::testing::kBatch;

// c1 is read three times (c2, sum, both); `side` reads the network's input; the add carries an
// activation; batch normalization sits on the residual branch. Average pooling: a maximum over
// 8 channels of tanh outputs has near-ties that a finite-difference step would cross.
constexpr const char* kResidualNet = R"(
seed: 21
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}
layers:
  - convolution: {name: c1, kernelSize: [3, 3], nOut: 3, activation: tanh}
  - convolution: {name: c2, kernelSize: [1, 1], nOut: 3, activation: identity}
  - batchNormalization: {name: bn}
  - add: {name: sum, inputs: [c1, bn], activation: tanh}
  - convolution: {name: side, inputs: input, kernelSize: [3, 3], nOut: 2, activation: sigmoid}
  - concat: {name: both, inputs: [sum, side, c1]}
  - subsampling: {poolingType: avg, kernelSize: [2, 2], stride: [2, 2]}
  - dense: {nOut: 5, activation: tanh}
  - output: {nOut: 4, activation: softmax, lossFunction: mcxent}
)";

// A convolution read by two poolings: the one right after it must not be fused into it.
constexpr const char* kConvReadTwice = R"(
seed: 22
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 2}}
layers:
  - convolution: {name: c, kernelSize: [3, 3], nOut: 2, activation: tanh}
  - subsampling: {name: p, poolingType: max, kernelSize: [2, 2], stride: [2, 2]}
  - subsampling: {name: q, inputs: c, poolingType: avg, kernelSize: [2, 2], stride: [2, 2]}
  - add: {inputs: [p, q]}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

// Flat vectors: a dense layer's output summed with a later one's and concatenated with the input.
constexpr const char* kDenseGraph = R"(
seed: 23
weightInit: XAVIER
inputType: {feedForward: {size: 6}}
layers:
  - dense: {name: d1, nOut: 4, activation: tanh}
  - dense: {name: d2, nOut: 4, activation: silu}
  - add: {name: s, inputs: [d2, d1]}
  - concat: {inputs: [s, input, d1]}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

// A pooled branch (globalPooling's 3x1x1) joined with dense ones, as Keras joins
// GlobalAveragePooling2D with a Dense: read as the 3 values it holds. These merges used to be
// refused as shapes that differ (3x1x1 against 3).
constexpr const char* kPooledWithDense = R"(
seed: 24
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 5, width: 5, channels: 2}}
layers:
  - convolution: {name: c, kernelSize: [3, 3], nOut: 3, activation: tanh}
  - globalPooling: {name: g, poolingType: avg}
  - dense: {name: d, inputs: input, nOut: 3, activation: tanh}
  - add: {name: s, inputs: [g, d], activation: tanh}
  - concat: {name: j, inputs: [d, g, s]}
  - output: {nOut: 3, activation: softmax, lossFunction: mcxent}
)";

}  // namespace

TEST_CASE("graph: a globalPooling output adds to and concatenates with dense outputs",
          "[nn][graph]") {
  check_whole_model_gradient(kPooledWithDense);
  Fixture f(kPooledWithDense);
  const auto plan = dl::plan_layers(f.config);
  CHECK(plan[1].output.str() == "3x1x1");
  CHECK(plan[3].output.str() == "3");  // flat: the pooled input is read as its 3 values
  CHECK(plan[4].output.str() == "9");
  CHECK(plan[5].config.nIn == 9);
}

TEST_CASE("graph: whole-model gradient through fan-out, add, concat and a branch from the input",
          "[nn][graph]") {
  check_whole_model_gradient(kResidualNet);
}

TEST_CASE("graph: a convolution read twice is not fused with the pooling after it",
          "[nn][graph]") {
  check_whole_model_gradient(kConvReadTwice);
}

TEST_CASE("graph: flat vectors summed and concatenated with the network's input", "[nn][graph]") {
  check_whole_model_gradient(kDenseGraph);
}

TEST_CASE("graph: the shapes of the residual network's merges", "[nn][graph]") {
  Fixture f(kResidualNet);
  const auto plan = dl::plan_layers(f.config);
  CHECK(plan[3].output.str() == "3x4x4");
  CHECK(plan[5].output.str() == "8x4x4");  // 3 + 2 + 3 channels
  CHECK(plan[6].output.str() == "8x2x2");
}

TEST_CASE("graph: a chain with its inputs written out computes the chain's bits", "[nn][graph]") {
  const std::string head = R"(
seed: 24
weightInit: XAVIER
inputType: {convolutionalFlat: {height: 6, width: 6, channels: 1}}
layers:
)";
  Fixture implicit((head + "  - convolution: {kernelSize: [3, 3], nOut: 2, activation: relu}\n"
                           "  - subsampling: {kernelSize: [2, 2], stride: [2, 2]}\n"
                           "  - output: {nOut: 3}\n")
                       .c_str());
  Fixture written((head +
                   "  - convolution: {kernelSize: [3, 3], nOut: 2, activation: relu, "
                   "inputs: input}\n"
                   "  - subsampling: {kernelSize: [2, 2], stride: [2, 2], inputs: convolution0}\n"
                   "  - output: {nOut: 3, inputs: [subsampling1]}\n")
                      .c_str());
  const std::size_t n = implicit.model.parameter_count();
  REQUIRE(written.model.parameter_count() == n);
  CHECK(implicit.loss() == written.loss());
  implicit.model.backward(kBatch, 1.0f);
  written.model.backward(kBatch, 1.0f);
  const std::vector<float> a(implicit.model.gradients(), implicit.model.gradients() + n);
  const std::vector<float> b(written.model.gradients(), written.model.gradients() + n);
  CHECK(a == b);
}

TEST_CASE("gradient buffers: a chain shares two, a residual block three, never two live at once",
          "[nn][graph]") {
  // A chain of 6: layer i's gradient is written at step i + 1 (the last: by the loss, at its own
  // step) and read at step i.
  const std::vector<std::size_t> floats{8, 8, 4, 4, 2, 2};
  const dl::GradientSlots chain =
      dl::plan_gradient_slots(floats, {1, 2, 3, 4, 5, 5}, {0, 1, 2, 3, 4, 5});
  CHECK(chain.capacity.size() == 2);
  for (std::size_t i = 0; i + 1 < floats.size(); ++i)
    CHECK(chain.slot_of[i] != chain.slot_of[i + 1]);
  for (std::size_t i = 0; i < floats.size(); ++i)
    CHECK(chain.capacity[static_cast<std::size_t>(chain.slot_of[i])] >= floats[i]);
  // 0 -> 1 -> 2 -> add(2, 0) = 3 -> 4: layer 0's gradient is live from step 3 down to step 0.
  const dl::GradientSlots block =
      dl::plan_gradient_slots({4, 4, 4, 4, 2}, {3, 2, 3, 4, 4}, {0, 1, 2, 3, 4});
  CHECK(block.capacity.size() == 3);
  CHECK(block.slot_of[0] != block.slot_of[1]);
  CHECK(block.slot_of[0] != block.slot_of[2]);
  CHECK(block.slot_of[1] != block.slot_of[2]);
  // A pooling (1) fused into its convolution (0): its gradient is read at step 0.
  const dl::GradientSlots fused = dl::plan_gradient_slots({8, 4, 2}, {1, 2, 2}, {0, 0, 2});
  CHECK(fused.slot_of[0] != fused.slot_of[1]);
}

TEST_CASE("gradient buffers: a deep residual network holds few of them", "[nn][graph]") {
  const dl::Config config =
      dl::load_config_file(std::string(DL_SOURCE_DIR) + "/configs/resnet20-cifar10.yaml");
  dl::CpuBackend backend;
  const dl::Model model(config, backend, 2);
  // 63 layers; at most a block's input, its first convolution's gradient and the sum's, which
  // its second batch normalization reads in place (nn/gradient_routes.hpp), and the scratch of
  // a stage's first block (two convolutions read its input) fits among them.
  CHECK(model.gradient_buffer_count() <= 3);
}
