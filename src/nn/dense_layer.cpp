#include "nn/dense_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/weight_init.hpp"

namespace dl {

void dense_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const int n_out = shaping.checked_nout();
  planned.config.nIn = shaping.flattened_size();
  planned.output = SampleShape::flat(n_out);
}

LayerKind dense_layer_kind() {
  return {LayerType::kDense,
          "dense",
          layer_keys({"name", "nIn", "nOut", "activation", "weightInit", "hasBias"},
                     {{"nOut", "add nOut: <number of units>"}}),
          {},
          Activation::kRelu,
          dense_shape,
          make_layer<DenseLayer>};
}

std::vector<ParameterSegment> DenseLayer::parameter_segments() const {
  return weight_and_bias_segments(weight_count());
}

void DenseLayer::initialize(float* host_params, RandomStream& rng) const {
  initialize_weights(plan_.weightInit, n_in(), n_out(), host_params, weight_count(), rng);
  if (plan_.config.hasBias)
    for (int i = 0; i < n_out(); ++i) host_params[weight_count() + i] = 0.0f;
}

void DenseLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  backend().dense_forward(batch, n_in(), n_out(), x, params_, bias(weight_count()),
                          activation_input());
  activate_output(batch);
}

void DenseLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  activation_gradient_in_place(dy, batch);
  backend().dense_backward(batch, n_in(), n_out(), x, params_, dy, dx, grads_,
                           bias_gradient(weight_count()));
}

}  // namespace dl
