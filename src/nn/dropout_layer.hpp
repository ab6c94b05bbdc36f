// Inverted dropout (DL4J's DropoutLayer; dropOut is the probability of *retaining* a value).
// Identity at inference. The mask of step t on worker w is drawn from the stream keyed by
// (seed, layer, worker, t), so a resumed run draws exactly the masks of an uninterrupted one.
#pragma once

#include "nn/layer.hpp"

namespace dl {

class DropoutLayer final : public Layer {
 public:
  DropoutLayer(PlannedLayer plan, int layer_index)
      : Layer(std::move(plan)), layer_index_(layer_index) {}
  void bind(Backend& backend, float* params, float* grads, int max_batch) override;
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;
  bool varies_between_steps() const override { return true; }  // a new mask every iteration

 private:
  int layer_index_;
  bool last_was_training_ = false;
  FloatBuffer mask_;
};

}  // namespace dl
