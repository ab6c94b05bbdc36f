// Batch normalization (DL4J's BatchNormalization). Parameters, in this order in the flat
// buffer: gamma, beta (trained), running mean, running variance (not trained: updated by the
// forward pass, averaged with the rest of the replica, saved in checkpoints).
#pragma once

#include "nn/layer.hpp"

namespace dl {

class BatchNormalizationLayer final : public Layer {
 public:
  explicit BatchNormalizationLayer(PlannedLayer plan) : Layer(std::move(plan)) {}
  std::vector<ParameterSegment> parameter_segments() const override;
  void initialize(float* host_params, RandomStream& rng) const override;
  void bind(Backend& backend, float* params, float* grads, int max_batch) override;
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;
  // The gradient is made from the input and the saved statistics: a ReLU after this layer may
  // run in place on its output.
  bool backward_reads_output() const override { return false; }
  bool backward_keeps_output_gradient() const override { return true; }
  // Before bind(): the activation layer that alone reads this one runs inside it
  // (Model::batchnorm_fusions): the output is act(normalized x), and the backward pass takes its
  // dy, the activation's output gradient, through act's gradient itself.
  void fuse_activation(Activation a) { activation_ = a; }

 private:
  BatchNormShape shape(int batch) const;
  std::size_t channels() const { return static_cast<std::size_t>(plan_.input.channels); }
  Activation activation_ = Activation::kIdentity;
  // save_affine_: the fused activation's per-channel scale and shift (Backend's
  // batchnorm_activation_* ops).
  FloatBuffer save_mean_, save_inv_std_, save_affine_, dx_scratch_;
};

}  // namespace dl
