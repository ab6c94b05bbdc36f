// 2-D convolution (DL4J's ConvolutionLayer): weights [nOut][nIn][kh][kw], then bias, then the
// layer's activation.
#pragma once

#include "nn/layer.hpp"
#include "nn/subsampling_layer.hpp"

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

  // Runs `pool`, the layer right after this one, inside this layer's ops (the Backend's fused
  // conv2d_pool_forward and conv2d_pool_backward): pooled_gradient is the model's gradient
  // buffer for the pooling's output. The results are the unfused layers' bits.
  void pool_with(SubsamplingLayer& pool, const float* pooled_gradient);

 private:
  ConvPool conv_pool(int batch) const;
  Conv2dGeometry geometry(int batch) const;
  std::size_t weight_count() const;
  std::size_t workspace_floats_ = 0;
  SubsamplingLayer* pool_ = nullptr;  // see pool_with
  const float* pooled_gradient_ = nullptr;
};

}  // namespace dl
