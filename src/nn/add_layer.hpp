// The residual sum (DL4J's ElementWiseVertex with Op.Add, Keras's Add): output = act(x0 + x1 +
// ...), inputs of one shape. Its gradient goes to every input unchanged. The activation (default
// identity) spares a ResNet block a separate ReLU layer after the sum.
#pragma once

#include "nn/merge_layer.hpp"

namespace dl {

class AddLayer final : public MergeLayer {
 public:
  explicit AddLayer(PlannedLayer plan) : MergeLayer(std::move(plan)) {}
  void forward_inputs(const std::vector<const float*>& xs, int batch) override;
  void backward_inputs(float* dy, const std::vector<float*>& dxs, int batch) override;
  // The sum may accumulate into its first input's buffer: its gradient needs no input.
  bool may_overwrite_input() const override { return true; }
  bool backward_reads_output() const override;
  // Every input's gradient is dy (after the activation's gradient, in place).
  bool passes_gradient_through() const override { return true; }
  // The activation's gradient pass adds the term (Backend::add_activation_backward); softmax,
  // which has no elementwise pass, does not.
  bool absorbs_gradient_term() const override { return plan_.activation != Activation::kSoftmax; }
  void absorb_gradient_term(const float* term) override { term_ = term; }

 private:
  const float* term_ = nullptr;
};

}  // namespace dl
