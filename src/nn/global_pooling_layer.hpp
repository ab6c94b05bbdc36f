// Global max or average pooling (DL4J's GlobalPoolingLayer, Keras's GlobalAveragePooling2D):
// each channel's whole plane pooled to one value, c x h x w -> c x 1 x 1. No parameters.
#pragma once

#include "nn/layer.hpp"

namespace dl {

class GlobalPoolingLayer final : public Layer {
 public:
  explicit GlobalPoolingLayer(PlannedLayer plan) : Layer(std::move(plan)) {}
  void bind(Backend& backend, float* params, float* grads, int max_batch) override;
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;

 private:
  IndexBuffer argmax_;
};

}  // namespace dl
