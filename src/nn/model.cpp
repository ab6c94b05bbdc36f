#include "nn/model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "nn/convolution_layer.hpp"
#include "nn/gradient_slots.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_registry.hpp"
#include "nn/output_layer.hpp"
#include "nn/subsampling_layer.hpp"

namespace dl {

Model::Model(const Config& config, Backend& backend, int max_batch)
    : backend_(&backend), max_batch_(max_batch), layers_(build_layers(plan_layers(config))) {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (ParameterSegment s : layers_[i]->parameter_segments()) {
      s.offset += parameter_count_;
      s.layer = static_cast<int>(i);
      segments_.push_back(s);
    }
    parameter_count_ += layers_[i]->parameter_count();
  }
  signature_ = network_signature(layers_);
  {
    const AllocationPurpose purpose(fmt::format(
        "the model's parameters and their gradients ({} values each)", parameter_count_));
    params_ = FloatBuffer(backend, parameter_count_);
    grads_ = FloatBuffer(backend, parameter_count_);
  }
  backend.fill(grads_.data(), parameter_count_, 0.0f);
  {
    const AllocationPurpose purpose(fmt::format("the model's input for batch {}", max_batch));
    input_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * input_size());
    labels_ = IndexBuffer(backend, static_cast<std::size_t>(max_batch));
    loss_sum_ = FloatBuffer(backend, 1);
  }
  std::vector<std::vector<int>> sources;
  for (const auto& layer : layers_) sources.push_back(layer->plan().sources);
  const std::vector<std::vector<int>> readers = layer_readers(sources);
  in_place_ = plan_in_place(readers);
  std::size_t offset = 0;
  std::size_t workspace_floats = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    if (in_place_[i])
      layer.write_output_into(layers_[static_cast<std::size_t>(layer.plan().sources.front())]
                                  ->mutable_output());
    // The layer's outputs, their gradients and its own buffers (masks, argmax).
    const AllocationPurpose purpose(
        fmt::format("the activations of layer {} ({}, {} values per sample) for batch {}", i,
                    layer_kind(layer.plan().config.type).name, layer.output_size(), max_batch));
    layer.bind(backend, params_.data() + offset, grads_.data() + offset, max_batch);
    offset += layer.parameter_count();
    workspace_floats = std::max(workspace_floats, layer.workspace_floats());
  }
  {
    const AllocationPurpose purpose(
        fmt::format("the convolutions' shared workspace ({} values) for batch {}", workspace_floats,
                    max_batch));
    workspace_ = FloatBuffer(backend, workspace_floats);
  }
  for (auto& layer : layers_) layer->use_workspace(workspace_.data());
  for (auto& layer : layers_) {
    const bool merges = layer_kind(layer->plan().config.type).merges_inputs;
    merges_.push_back(merges ? static_cast<MergeLayer*>(layer.get()) : nullptr);
  }
  // Sized once, so that a step allocates nothing (invariant 2).
  std::size_t most_inputs = 1;
  for (const auto& layer : layers_)
    most_inputs = std::max(most_inputs, layer->plan().sources.size());
  merge_inputs_.reserve(most_inputs);
  input_gradients_.reserve(most_inputs);
  const std::vector<std::size_t> fused = pooling_fusions(readers);
  assign_gradient_buffers(readers, fused);
  route_gradients();
  for (std::size_t i : fused)
    static_cast<ConvolutionLayer&>(*layers_[i])
        .pool_with(static_cast<SubsamplingLayer&>(*layers_[i + 1]), output_gradient_[i + 1]);
}

// The layers that write their output over their first input's buffer (Layer::may_overwrite_input):
// that input is another layer's output (the network's input is the data, read again by
// evaluation), read by this layer alone and only once, and its own backward pass does not read
// it. The values computed are the same; only where they live changes.
std::vector<bool> Model::plan_in_place(const std::vector<std::vector<int>>& readers) const {
  std::vector<bool> in_place(layers_.size(), false);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const int source = layers_[i]->plan().sources.front();
    if (source == kNetworkInput || !layers_[i]->may_overwrite_input()) continue;
    const auto s = static_cast<std::size_t>(source);
    in_place[i] = readers[s] == std::vector<int>{static_cast<int>(i)} &&
                  !layers_[s]->backward_reads_output();
  }
  return in_place;
}

// Each layer's output gradient in a buffer shared with layers whose gradients are never live at
// the same time (nn/gradient_slots.hpp).
void Model::assign_gradient_buffers(const std::vector<std::vector<int>>& readers,
                                    const std::vector<std::size_t>& fused) {
  const std::size_t n = layers_.size();
  std::vector<std::size_t> floats(n);
  std::vector<int> first_write(n), last_read(n);
  for (std::size_t i = 0; i < n; ++i) {
    floats[i] = layers_[i]->output_size();
    // Written by its highest reader; the output layer's, by the loss before its own step.
    first_write[i] = readers[i].empty() ? static_cast<int>(i) : readers[i].back();
    last_read[i] = static_cast<int>(i);
  }
  // A pooling fused into the convolution before it has its gradient read at that step.
  for (std::size_t i : fused) last_read[i + 1] = static_cast<int>(i);
  const GradientSlots slots = plan_gradient_slots(floats, first_write, last_read);
  const AllocationPurpose purpose(
      fmt::format("the layers' output gradients ({} buffers shared by {} layers) for batch {}",
                  slots.capacity.size(), n, max_batch_));
  for (std::size_t capacity : slots.capacity)
    gradient_buffers_.emplace_back(*backend_, static_cast<std::size_t>(max_batch_) * capacity);
  for (std::size_t i = 0; i < n; ++i)
    output_gradient_.push_back(
        gradient_buffers_[static_cast<std::size_t>(slots.slot_of[i])].data());
}

// Where each layer's input gradients go. A layer read once gets its reader's gradient written
// straight into its output-gradient buffer. A layer read more than once (a residual block's input
// feeds the block and the shortcut) gets the sum: the backward pass runs bottom to top, so its
// last reader writes first, and each earlier reader writes into a scratch buffer that is then
// added (Caffe's split layer, without its copies).
void Model::route_gradients() {
  std::vector<bool> written(layers_.size(), false);
  std::size_t slots_needed = 0;
  std::size_t scratch_floats = 0;
  routes_.resize(layers_.size());
  for (std::size_t i = layers_.size(); i-- > 0;) {
    int slots = 0;
    for (int s : layers_[i]->plan().sources) {
      GradientRoute route;
      if (s != kNetworkInput) {
        const auto j = static_cast<std::size_t>(s);
        route.target = output_gradient_[j];
        route.floats = layers_[j]->output_size();
        if (written[j]) {
          route.scratch_slot = slots++;
          scratch_floats = std::max(scratch_floats, route.floats);
        }
        written[j] = true;
      }
      routes_[i].push_back(route);
    }
    slots_needed = std::max(slots_needed, static_cast<std::size_t>(slots));
  }
  const AllocationPurpose purpose(
      fmt::format("the gradient sums of layers read more than once ({} x {} values) for batch {}",
                  slots_needed, scratch_floats, max_batch_));
  for (std::size_t k = 0; k < slots_needed; ++k)
    fan_out_scratch_.emplace_back(*backend_, static_cast<std::size_t>(max_batch_) * scratch_floats);
}

const float* Model::source_output(int source) const {
  return source == kNetworkInput ? input_.data()
                                 : layers_[static_cast<std::size_t>(source)]->output();
}

// The convolutions whose next layer, a pooling, runs inside them (ConvolutionLayer::pool_with):
// on the CPU, each convolution task pools its own samples while they are in its cache.
// Both must be next to each other, and the pooling the convolution's only reader (the fused op
// does not keep the convolution's output for anyone else).
std::vector<std::size_t> Model::pooling_fusions(
    const std::vector<std::vector<int>>& readers) const {
  std::vector<std::size_t> fused;
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    auto* convolution = dynamic_cast<ConvolutionLayer*>(layers_[i].get());
    auto* pooling = dynamic_cast<SubsamplingLayer*>(layers_[i + 1].get());
    const bool only_reader = readers[i] == std::vector<int>{static_cast<int>(i) + 1};
    // The fused op keeps the activation's output alone, so activations that read their input
    // run unfused.
    if (convolution != nullptr && pooling != nullptr && only_reader &&
        !ops::activation_reads_input(convolution->plan().activation))
      fused.push_back(i);
  }
  return fused;
}

void Model::initialize(std::uint64_t seed) {
  std::vector<float> host(parameter_count_);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    RandomStream rng(seed, i);
    layers_[i]->initialize(host.data() + offset, rng);
    offset += layers_[i]->parameter_count();
  }
  upload_parameters(host.data());
}

void Model::upload_parameters(const float* host) {
  backend_->upload(params_.data(), host, parameter_count_ * sizeof(float));
}

void Model::download_parameters(float* host) {
  backend_->download(host, params_.data(), parameter_count_ * sizeof(float));
}

bool Model::steps_replayable() const {
  for (const auto& layer : layers_)
    if (layer->varies_between_steps()) return false;
  return true;
}

void Model::forward(int batch, const StepContext& ctx) {
  DL_CHECK(batch > 0 && batch <= max_batch_, "batch size out of the bound range");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const std::vector<int>& sources = layers_[i]->plan().sources;
    if (merges_[i] == nullptr) {
      layers_[i]->forward(source_output(sources.front()), batch, ctx);
      continue;
    }
    merge_inputs_.clear();
    for (int s : sources) merge_inputs_.push_back(source_output(s));
    merges_[i]->forward_inputs(merge_inputs_, batch);
  }
}

void Model::compute_loss(int batch) {
  const std::size_t last = layers_.size() - 1;
  static_cast<OutputLayer&>(*layers_[last])
      .loss(labels_.data(), batch, 0.0f, output_gradient_[last], loss_sum_.data());
}

void Model::backward(int batch, float grad_scale) {
  const std::size_t last = layers_.size() - 1;
  static_cast<OutputLayer&>(*layers_[last])
      .loss(labels_.data(), batch, grad_scale, output_gradient_[last], loss_sum_.data());
  for (std::size_t i = last + 1; i-- > 0;) {
    input_gradients_.clear();
    for (const GradientRoute& r : routes_[i])
      input_gradients_.push_back(r.scratch_slot < 0 ? r.target
                                                    : fan_out_scratch_[r.scratch_slot].data());
    float* dy = output_gradient_[i];
    if (merges_[i] != nullptr)
      merges_[i]->backward_inputs(dy, input_gradients_, batch);
    else
      layers_[i]->backward(source_output(layers_[i]->plan().sources.front()), dy,
                           input_gradients_.front(), batch);
    for (const GradientRoute& r : routes_[i])
      if (r.scratch_slot >= 0)
        backend_->axpy(static_cast<std::size_t>(batch) * r.floats, 1.0f,
                       fan_out_scratch_[r.scratch_slot].data(), r.target);
  }
}

}  // namespace dl
