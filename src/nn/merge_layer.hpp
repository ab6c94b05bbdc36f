// A layer that merges two or more inputs (add, concat): the model hands it every input's
// activations and, in the backward pass, a gradient buffer for each input.
#pragma once

#include <vector>

#include "nn/layer.hpp"

namespace dl {

class MergeLayer : public Layer {
 public:
  explicit MergeLayer(PlannedLayer plan) : Layer(std::move(plan)) {}

  // xs[k]: input k, [batch x plan().inputs[k].size()]. The result is left in output().
  virtual void forward_inputs(const std::vector<const float*>& xs, int batch) = 0;
  // dy: the gradient w.r.t. output(), which this may overwrite; dxs[k]: where the gradient
  // w.r.t. input k goes, overwritten (null for the network's input, which needs none).
  virtual void backward_inputs(float* dy, const std::vector<float*>& dxs, int batch) = 0;

  // A merge is never called as a one-input layer.
  void forward(const float* x, int batch, const StepContext& ctx) final;
  void backward(const float* x, const float* dy, float* dx, int batch) final;
};

}  // namespace dl
