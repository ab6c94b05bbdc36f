#include "nn/output_layer.hpp"

#include <fmt/format.h>

#include "backend/ops/output_loss.hpp"
#include "config/enum_names.hpp"
#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

// Cross-entropy reads its activation's outputs as class probabilities, -log a[label], and only
// softmax gives them: after any other activation nothing pulls the other classes down, so every
// output grows alike and the network learns nothing (chance accuracy, a loss falling all the
// same). DL4J refuses these pairs too (OutputLayerUtil). The likeliest way in is the top-level
// `activation`, which the output layer takes where it sets none.
void check_cross_entropy_activation(const LayerShaping& shaping, const PlannedLayer& planned) {
  const LossFunction loss = planned.config.lossFunction;
  if (loss == LossFunction::kMse || planned.activation == Activation::kSoftmax) return;
  const bool inherited = !planned.config.activation.has_value();
  shaping.fail(
      fmt::format("lossFunction {} needs class probabilities, which only activation softmax "
                  "gives, but the layer's activation is {}{}: it would train to chance",
                  enum_name(loss), enum_name(planned.activation),
                  inherited ? " (the top-level activation, taken where the layer sets none)" : ""),
      "set activation: softmax on the output layer, or lossFunction: mse");
}

// A dense layer's shape; label smoothing only where the loss takes smoothed targets; cross-entropy
// after softmax only.
void output_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  dense_shape(shaping, planned);
  const OutputLoss loss{planned.config.lossFunction, planned.activation,
                        static_cast<float>(planned.config.labelSmoothing)};
  if (loss.label_smoothing > 0.0f && !ops::is_softmax_cross_entropy(loss)) {
    shaping.fail("labelSmoothing smooths the targets of softmax with cross-entropy only",
                 "use activation: softmax with lossFunction: mcxent or negativeloglikelihood, or "
                 "remove labelSmoothing");
  }
  check_cross_entropy_activation(shaping, planned);
}

}  // namespace

LayerKind output_layer_kind() {
  return {LayerType::kOutput,
          "output",
          layer_keys({"name", "nIn", "nOut", "activation", "weightInit", "hasBias", "lossFunction",
                      "labelSmoothing"},
                     {{"nOut", "add nOut: <number of classes>"}}),
          {},
          Activation::kSoftmax,
          output_shape,
          make_layer<OutputLayer>};
}

void OutputLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  DenseLayer::bind(backend, params, grads, max_batch);
  z_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
}

void OutputLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  backend().dense_forward(batch, n_in(), n_out(), x, params_, bias(weight_count()), z_.data());
  backend().activation_forward(plan_.activation, batch, n_out(), z_.data(), output_data_);
}

void OutputLayer::loss(const std::int32_t* labels, int batch, float grad_scale, float* dz,
                       float* loss_sum) {
  const OutputLoss op{plan_.config.lossFunction, plan_.activation,
                      static_cast<float>(plan_.config.labelSmoothing)};
  backend().output_loss(op, batch, n_out(), z_.data(), labels, output_data_, dz, grad_scale,
                        loss_sum);
}

void OutputLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  backend().dense_backward(batch, n_in(), n_out(), x, params_, dy, dx, grads_,
                           bias_gradient(weight_count()));
}

}  // namespace dl
