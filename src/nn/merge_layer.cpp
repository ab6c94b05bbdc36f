#include "nn/merge_layer.hpp"

#include "core/error.hpp"

namespace dl {

void MergeLayer::forward(const float* /*x*/, int /*batch*/, const StepContext& /*ctx*/) {
  DL_CHECK(false, "a merge layer runs through forward_inputs");
}

void MergeLayer::backward(const float* /*x*/, const float* /*dy*/, float* /*dx*/, int /*batch*/) {
  DL_CHECK(false, "a merge layer runs through backward_inputs");
}

}  // namespace dl
