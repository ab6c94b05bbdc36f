// Channel concatenation (DL4J's MergeVertex, Keras's Concatenate on the channel axis): image
// inputs of one height and width stack their channels in the order listed; flat inputs join end to
// end. Per sample that is one block after another, so both passes are strided copies.
#pragma once

#include <cstddef>

#include "nn/merge_layer.hpp"

namespace dl {

class ConcatLayer final : public MergeLayer {
 public:
  explicit ConcatLayer(PlannedLayer plan) : MergeLayer(std::move(plan)) {}
  void forward_inputs(const std::vector<const float*>& xs, int batch) override;
  void backward_inputs(float* dy, const std::vector<float*>& dxs, int batch) override;
  bool backward_reads_output() const override { return false; }  // slices of dy only
};

}  // namespace dl
