// An activation as a layer of its own (DL4J's ActivationLayer): output = act(input), shape kept,
// no parameters. It is how convolution -> batch normalization -> ReLU, the order modern CNNs use,
// is written. Its backward may read both its input (the layer before's output, which the model
// keeps unless this layer overwrites it) and its output, so every activation of
// backend/ops/activation.hpp works here, softmax per sample included.
#pragma once

#include "nn/layer.hpp"

namespace dl {

class ActivationLayer final : public Layer {
 public:
  explicit ActivationLayer(PlannedLayer plan) : Layer(std::move(plan)) {}
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;
  // ReLU, sigmoid, tanh... have their gradient from the output alone: they may overwrite the input.
  bool may_overwrite_input() const override;
  bool backward_reads_output() const override { return !fused_; }
  bool backward_keeps_output_gradient() const override { return true; }
  bool passes_gradient_through() const override { return fused_; }
  // The batch normalization before this layer, its only reader, computes the activation
  // (BatchNormalizationLayer::fuse_activation): forward() leaves that layer's output, which is
  // this one's (the model writes it into the input's buffer), and backward() passes dy on.
  void run_fused() { fused_ = true; }

 private:
  bool fused_ = false;
};

}  // namespace dl
