// A layer of a feed-forward network. Layers own no parameters: they see views into the model's
// one flat parameter buffer and one flat gradient buffer (DESIGN.md invariant 1), and compute
// through Backend ops only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"
#include "core/random.hpp"
#include "nn/layer_plan.hpp"
#include "nn/parameter_segment.hpp"

namespace dl {

// What changes from one step to the next and the layers need to know.
struct StepContext {
  bool training = false;
  std::uint64_t seed = 0;       // the run's seed
  std::uint64_t iteration = 0;  // global step: with the worker, keys dropout's random stream
  int worker = 0;
};

class Layer {
 public:
  explicit Layer(PlannedLayer plan) : plan_(std::move(plan)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const PlannedLayer& plan() const { return plan_; }
  const std::string& name() const { return plan_.config.name; }
  std::size_t input_size() const { return plan_.input.size(); }
  std::size_t output_size() const { return plan_.output.size(); }

  // The layout of this layer's slice of the flat buffer, offsets relative to the slice.
  virtual std::vector<ParameterSegment> parameter_segments() const { return {}; }
  std::size_t parameter_count() const;

  // Writes initial values into `host_params` (this layer's slice, in host memory).
  virtual void initialize(float* host_params, RandomStream& rng) const;

  // Points the layer at its slices of the flat buffers and allocates its activations for up to
  // `max_batch` samples.
  virtual void bind(Backend& backend, float* params, float* grads, int max_batch);
  // Scratch floats this layer's ops need at the bound batch (known after bind). The model gives
  // all its layers one workspace of the largest need (use_workspace): they run one after another
  // on one backend stream, and no op keeps anything in it from one call to the next.
  virtual std::size_t workspace_floats() const { return 0; }
  void use_workspace(float* workspace) { workspace_ = workspace; }

  // x: [batch x input_size]. The result is left in output().
  virtual void forward(const float* x, int batch, const StepContext& ctx) = 0;
  // x: the input of the last forward; dy: gradient w.r.t. output(); writes the parameter
  // gradients and, unless dx is null (the first layer), the gradient w.r.t. x.
  virtual void backward(const float* x, const float* dy, float* dx, int batch) = 0;

  // Whether forward() in training issues different ops or arguments from step to step for the
  // same batch size (dropout's masks do): such a step cannot be recorded once and replayed.
  virtual bool varies_between_steps() const { return false; }

  const float* output() const { return output_data_; }
  float* mutable_output() { return output_data_; }

  // Running in place (Model::plan_in_place): a layer whose backward pass reads neither its input
  // nor anything the overwrite destroys may write its output over its first input's buffer when it
  // is that input's only reader, and the input's own backward pass does not read it. A ReLU after
  // batch normalization, or a residual sum into its branch's last output, then holds no tensor of
  // its own (PyTorch's inplace=True, decided by the model instead of by the network's author).
  virtual bool may_overwrite_input() const { return false; }
  virtual bool backward_reads_output() const { return true; }
  // Before bind(): the output goes into `buffer` (the input's, max_batch x output_size floats).
  void write_output_into(float* buffer) { borrowed_output_ = buffer; }

  // The backward pass's gradient routing (nn/gradient_routes.hpp). A layer whose backward leaves
  // the gradient w.r.t. each input in its dy (the residual add; an activation fused into the batch
  // normalization before it) may be handed dy itself as an input's gradient, and copies dy only
  // into a buffer it is handed that is not dy.
  virtual bool passes_gradient_through() const { return false; }
  // Whether backward() only reads dy, so that dy may be a buffer other layers read after it.
  virtual bool backward_keeps_output_gradient() const { return false; }
  // Whether backward() can add one more term to dy as it first reads it (the residual add, in its
  // activation's gradient pass): the model then hands it, once, the buffer of a gradient sum's
  // last term (absorb_gradient_term), which the sum then skips. Every backward() adds it.
  virtual bool absorbs_gradient_term() const { return false; }
  virtual void absorb_gradient_term(const float* /*term*/) {}

 protected:
  Backend& backend() { return *backend_; }

  // A layer's own activation (dense, convolution): its product goes to activation_input(), then
  // activate_output(batch) writes output() = act(product). The product is kept apart from the
  // output, for the backward pass, only where the activation's gradient reads its input
  // (ops::activation_reads_input); otherwise the activation runs in place.
  float* activation_input();
  void activate_output(int batch);
  // dy (this layer's output gradient, not read again) becomes the product's gradient, in place;
  // with a term (absorb_gradient_term), the gradient of dy + term.
  void activation_gradient_in_place(const float* dy, int batch, const float* term = nullptr);

  // The bias the kernels read and the gradient they write, which follow the weights (the first
  // `weight_count` floats of the layer's slices). A layer with hasBias: false has no bias
  // parameters: the kernels, one signature on every backend, read zeros and write a gradient
  // nobody reads (one add per output, far below the product's cost).
  const float* bias(std::size_t weight_count) const;
  float* bias_gradient(std::size_t weight_count);
  // The bias segment after `weight_count` weights, or none without a bias.
  std::vector<ParameterSegment> weight_and_bias_segments(std::size_t weight_count) const;

  PlannedLayer plan_;
  Backend* backend_ = nullptr;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  int max_batch_ = 0;
  FloatBuffer output_;              // empty where the output is written into the input's buffer
  float* borrowed_output_ = nullptr;  // that buffer (write_output_into)
  float* output_data_ = nullptr;      // where the output is: output_ or the borrowed buffer
  FloatBuffer pre_activation_;  // allocated only where the activation's gradient reads it
  FloatBuffer absent_bias_, absent_bias_gradient_;  // hasBias: false (see bias())
  float* workspace_ = nullptr;                      // the model's shared workspace
};

}  // namespace dl
