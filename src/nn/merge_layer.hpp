// A layer that merges two or more inputs (add, concat): the model hands it every input's
// activations and, in the backward pass, a gradient buffer for each input.
#pragma once

#include <vector>

#include "nn/layer.hpp"

namespace dl {

// The shapes a merge joins. Where flat vectors meet images of one pixel (globalPooling's
// c x 1 x 1, which dense layers already read as c values), those images are read as the flat
// vectors they are in memory, so that a pooled branch adds to or concatenates with a dense one
// (Keras's GlobalAveragePooling2D beside a Dense); other shapes are returned as they are.
std::vector<SampleShape> merge_input_shapes(const std::vector<SampleShape>& inputs);

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
