// 2-D convolution (DL4J's ConvolutionLayer): weights [nOut][nIn][kh][kw], then bias, then the
// layer's activation.
#pragma once

#include "nn/layer.hpp"

namespace dl {

class ConvolutionLayer final : public Layer {
 public:
  explicit ConvolutionLayer(PlannedLayer plan);
  std::vector<ParameterSegment> parameter_segments() const override;
  void initialize(float* host_params, RandomStream& rng) const override;
  void bind(Backend& backend, float* params, float* grads, int max_batch) override;
  std::size_t workspace_floats() const override { return workspace_floats_; }
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;

 private:
  Conv2dGeometry geometry(int batch) const;
  std::size_t weight_count() const;
  std::size_t workspace_floats_ = 0;
};

}  // namespace dl
