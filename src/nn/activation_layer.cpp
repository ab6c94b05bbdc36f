#include "nn/activation_layer.hpp"

#include "backend/ops/activation.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

// `activation` unset: the config's global activation, else ReLU (the layer exists to apply one).
LayerKind activation_layer_kind() {
  return {LayerType::kActivation, "activation", layer_keys({"name", "activation"}), {},
          Activation::kRelu,      keep_shape,   make_layer<ActivationLayer>};
}

void ActivationLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  if (fused_) return;
  backend().activation_forward(plan_.activation, batch, output_size(), x, output_data_);
}

void ActivationLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  if (dx == nullptr) return;  // the first layer: no gradient to pass on
  if (fused_) {
    if (dx != dy)
      backend().copy(dx, dy, static_cast<std::size_t>(batch) * output_size() * sizeof(float));
    return;
  }
  backend().activation_backward(plan_.activation, batch, output_size(), x, output_data_, dy, dx);
}

bool ActivationLayer::may_overwrite_input() const {
  return !ops::activation_reads_input(plan_.activation);
}

}  // namespace dl
