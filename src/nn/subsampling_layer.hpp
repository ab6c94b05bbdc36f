// Max or average pooling (DL4J's SubsamplingLayer). No parameters.
#pragma once

#include "nn/layer.hpp"

namespace dl {

class SubsamplingLayer final : public Layer {
 public:
  explicit SubsamplingLayer(PlannedLayer plan) : Layer(std::move(plan)) {}
  void bind(Backend& backend, float* params, float* grads, int max_batch) override;
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;

  // From now on the convolution before it runs this layer's forward and backward inside its own
  // ops (ConvolutionLayer::pool_with): this layer's calls do nothing.
  void run_by_previous_layer() { run_by_previous_layer_ = true; }
  Pool2dGeometry geometry(int batch) const;
  PoolingType pooling() const { return plan_.config.poolingType; }
  std::int32_t* argmax() { return argmax_.data(); }

 private:
  IndexBuffer argmax_;
  bool run_by_previous_layer_ = false;
};

}  // namespace dl
