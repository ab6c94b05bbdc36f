#include "nn/merge_layer.hpp"

#include "core/error.hpp"

namespace dl {

std::vector<SampleShape> merge_input_shapes(const std::vector<SampleShape>& inputs) {
  bool any_flat = false;
  for (const SampleShape& in : inputs) any_flat = any_flat || !in.spatial;
  std::vector<SampleShape> shapes = inputs;
  if (!any_flat) return shapes;
  for (SampleShape& in : shapes) {
    if (in.spatial && in.height == 1 && in.width == 1) in = SampleShape::flat(in.channels);
  }
  return shapes;
}

void MergeLayer::forward(const float* /*x*/, int /*batch*/, const StepContext& /*ctx*/) {
  DL_CHECK(false, "a merge layer runs through forward_inputs");
}

void MergeLayer::backward(const float* /*x*/, const float* /*dy*/, float* /*dx*/, int /*batch*/) {
  DL_CHECK(false, "a merge layer runs through backward_inputs");
}

}  // namespace dl
