#include "nn/output_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

LayerKind output_layer_kind() {
  return {LayerType::kOutput,
          "output",
          layer_keys({"name", "nIn", "nOut", "activation", "weightInit", "lossFunction"},
                     {{"nOut", "add nOut: <number of classes>"}}),
          {},
          Activation::kSoftmax,
          dense_shape,
          make_layer<OutputLayer>};
}

void OutputLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  DenseLayer::bind(backend, params, grads, max_batch);
  z_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
}

void OutputLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  backend().dense_forward(batch, n_in(), n_out(), x, params_, params_ + weight_count(), z_.data());
  backend().activation_forward(plan_.activation, batch, n_out(), z_.data(), output_.data());
}

void OutputLayer::loss(const std::int32_t* labels, int batch, float grad_scale, float* dz,
                       float* loss_sum) {
  backend().output_loss(plan_.config.lossFunction, plan_.activation, batch, n_out(), z_.data(),
                        labels, output_.data(), dz, grad_scale, loss_sum);
}

void OutputLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  backend().dense_backward(batch, n_in(), n_out(), x, params_, dy, dx, grads_,
                           grads_ + weight_count());
}

}  // namespace dl
