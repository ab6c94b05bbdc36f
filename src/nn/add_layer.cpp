#include "nn/add_layer.hpp"

#include <fmt/format.h>

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/merge_layer.hpp"

namespace dl {

namespace {

void add_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const auto& inputs = shaping.inputs();
  const std::vector<SampleShape> shapes = merge_input_shapes(inputs);
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    if (shapes[k] == shapes.front()) continue;
    // concat is a way out only where it would take the two: one height and width.
    const bool concat_joins =
        shapes[k].height == shapes.front().height && shapes[k].width == shapes.front().width;
    shaping.fail(fmt::format("it sums inputs of different shapes: '{}' gives {}, '{}' gives {}",
                             shaping.input_names().front(), inputs.front().str(),
                             shaping.input_names()[k], inputs[k].str()),
                 concat_joins ? "make the shapes equal (on a residual shortcut, a 1x1 convolution "
                                "with the block's stride and channels), or join them with concat"
                              : "make the shapes equal (on a residual shortcut, a 1x1 convolution "
                                "with the block's stride and channels; an image and a flat vector: "
                                "pool the image to one pixel with globalPooling, or flatten it "
                                "with a dense layer of the vector's size)");
  }
  planned.output = shapes.front();
  planned.config.nOut = planned.output.channels;
}

}  // namespace

// `activation` unset: identity (the sum alone), whatever the config's global activation says.
LayerKind add_layer_kind() {
  LayerKind kind{LayerType::kAdd, "add",    layer_keys({"name", "activation"}), {},
                 Activation::kIdentity, add_shape, make_layer<AddLayer>};
  kind.merges_inputs = true;
  return kind;
}

void AddLayer::forward_inputs(const std::vector<const float*>& xs, int batch) {
  const std::size_t n = static_cast<std::size_t>(batch) * output_size();
  float* sum = activation_input();
  if (sum != xs.front()) backend().copy(sum, xs.front(), n * sizeof(float));
  // Where the sum is the output (the activation's gradient does not read its input), the last
  // term and the activation go in one pass: the same values, one pass fewer.
  const bool fused = sum == output_data_ && plan_.activation != Activation::kSoftmax;
  const std::size_t apart = fused ? xs.size() - 1 : xs.size();
  for (std::size_t k = 1; k < apart; ++k) backend().axpy(n, 1.0f, xs[k], sum);
  if (fused)
    backend().add_activation_forward(plan_.activation, n, xs.back(), sum);
  else
    activate_output(batch);
}

void AddLayer::backward_inputs(float* dy, const std::vector<float*>& dxs, int batch) {
  activation_gradient_in_place(dy, batch, term_);
  const std::size_t bytes = static_cast<std::size_t>(batch) * output_size() * sizeof(float);
  for (float* dx : dxs)
    if (dx != nullptr && dx != dy) backend().copy(dx, dy, bytes);
}

// Only the activation's gradient reads the output; the sum's passes dy on unchanged.
bool AddLayer::backward_reads_output() const { return plan_.activation != Activation::kIdentity; }

}  // namespace dl
