// A network built from the config, a graph of layers computed in the listed order
// (nn/layer_graph.hpp): its layers, one flat parameter buffer and one flat gradient buffer in
// backend memory (views handed to the layers), and the activation, gradient and batch buffers for
// up to `max_batch` samples, all allocated here so a step allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/device_buffer.hpp"
#include "config/config.hpp"
#include "nn/gradient_routes.hpp"
#include "nn/layer.hpp"
#include "nn/merge_layer.hpp"

namespace dl {

// The layers of the config, unbound (for describing a network without a backend).
std::vector<std::unique_ptr<Layer>> build_layers(const std::vector<PlannedLayer>& plan);

// "convolution:520,subsampling:0,...": identifies the parameter layout a checkpoint was saved from.
std::string network_signature(const std::vector<std::unique_ptr<Layer>>& layers);
// Where two signatures part, for a message: "layers.3: dense with 1824 parameters -> dense with
// 1881", or the layer counts; the whole signatures where neither tells (a malformed one).
std::string signature_difference(const std::string& saved, const std::string& now);

// The table `dl-train validate` prints: name, type, input and output shapes, parameters.
std::string layer_table(const Config& config);

class Model {
 public:
  Model(const Config& config, Backend& backend, int max_batch);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  Backend& backend() { return *backend_; }
  int max_batch() const { return max_batch_; }
  std::size_t input_size() const { return layers_.front()->input_size(); }
  int num_classes() const { return static_cast<int>(layers_.back()->output_size()); }
  std::size_t parameter_count() const { return parameter_count_; }
  const std::vector<ParameterSegment>& segments() const { return segments_; }
  const std::string& signature() const { return signature_; }
  // The buffers the layers' output gradients share (assign_gradient_buffers).
  std::size_t gradient_buffer_count() const { return gradient_buffers_.size(); }

  float* parameters() { return params_.data(); }
  float* gradients() { return grads_.data(); }
  // Draws initial parameters on the host from `seed` (layer i uses stream i) and uploads them.
  void initialize(std::uint64_t seed);
  void upload_parameters(const float* host);
  void download_parameters(float* host);

  // The batch buffers a step reads: images [max_batch x input_size], labels [max_batch].
  float* input() { return input_.data(); }
  std::int32_t* labels() { return labels_.data(); }

  void forward(int batch, const StepContext& ctx);
  // Whether a training step's ops and arguments depend only on the batch size and the gradient
  // scale (no layer varies between steps), so that one recording of it can be replayed.
  bool steps_replayable() const;
  // The loss of the last forward against labels(), then the backward pass: gradients() holds
  // grad_scale * d(summed loss)/d(parameters). loss_sum() holds the summed loss.
  void backward(int batch, float grad_scale);
  // The loss of the last forward against labels() only (evaluation): loss_sum() holds it.
  void compute_loss(int batch);
  // The output layer's activations of the last forward: [batch x num_classes].
  const float* output() const { return layers_.back()->output(); }
  float* loss_sum() { return loss_sum_.data(); }
  std::size_t layer_count() const { return layers_.size(); }
  const Layer& layer(std::size_t i) const { return *layers_[i]; }
  // Whether layer i writes its output over its first input's buffer (Layer::may_overwrite_input).
  bool runs_in_place(std::size_t i) const { return in_place_[i]; }

 private:
  // readers: layer_readers of the layers' sources (nn/layer_graph.hpp).
  std::vector<bool> plan_in_place(const std::vector<std::vector<int>>& readers) const;
  std::vector<std::size_t> pooling_fusions(const std::vector<std::vector<int>>& readers) const;
  std::vector<std::size_t> batchnorm_fusions(const std::vector<std::vector<int>>& readers) const;
  void route_gradients(const std::vector<std::vector<int>>& sources,
                       const std::vector<std::size_t>& fused);
  // The slot planner's input (nn/gradient_slots.hpp): per entry, floats per sample and the steps
  // of its first write and last read.
  struct GradientLifetimes {
    std::vector<std::size_t> floats;
    std::vector<int> first_write, last_read;
  };
  std::vector<std::vector<std::size_t>> add_scratch_lifetimes(GradientLifetimes& lives) const;
  // Where layer i's backward writes the gradient w.r.t. its input k (routes_).
  float* input_gradient(std::size_t i, std::size_t k, float* dy);
  const float* source_output(int source) const;

  Backend* backend_;
  int max_batch_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<ParameterSegment> segments_;
  std::size_t parameter_count_ = 0;
  std::string signature_;
  FloatBuffer params_, grads_;
  FloatBuffer input_;
  IndexBuffer labels_;
  FloatBuffer loss_sum_;
  std::vector<FloatBuffer> gradient_buffers_;  // shared by layers (assign_gradient_buffers)
  std::vector<float*> output_gradient_;        // per layer: gradient w.r.t. its output
  FloatBuffer workspace_;            // every layer's scratch: the largest Layer::workspace_floats()
  std::vector<bool> in_place_;       // per layer: writes over its input's buffer (plan_in_place)
  std::vector<MergeLayer*> merges_;  // per layer: itself if it merges, else null
  GradientRoutes routes_;
  // Per step, per scratch slot of its gradient sums: a gradient buffer free at that step.
  std::vector<std::vector<float*>> scratch_;
  std::vector<const float*> merge_inputs_;    // reused each step: no allocation in a step
  std::vector<float*> input_gradients_;
};

}  // namespace dl
