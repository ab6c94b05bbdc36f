#include "nn/model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "nn/activation_layer.hpp"
#include "nn/batch_normalization_layer.hpp"
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
  const std::vector<std::size_t> normalized = batchnorm_fusions(readers);
  for (std::size_t i : normalized) {
    auto& activation = static_cast<ActivationLayer&>(*layers_[i]);
    const auto source = static_cast<std::size_t>(activation.plan().sources.front());
    static_cast<BatchNormalizationLayer&>(*layers_[source])
        .fuse_activation(activation.plan().activation);
    activation.run_fused();
  }
  in_place_ = plan_in_place(readers);
  // A fused activation's output is the batch normalization's.
  for (std::size_t i : normalized) in_place_[i] = true;
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
  route_gradients(sources, fused);
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

// Where each layer's input gradients go (nn/gradient_routes.hpp), and each layer's output
// gradient in a buffer shared with layers whose gradients are never live at the same time
// (nn/gradient_slots.hpp).
void Model::route_gradients(const std::vector<std::vector<int>>& sources,
                            const std::vector<std::size_t>& fused) {
  const std::size_t n = layers_.size();
  GradientRouteInputs properties;
  std::vector<std::size_t> floats(n);
  for (std::size_t i = 0; i < n; ++i) {
    properties.passes_through.push_back(layers_[i]->passes_gradient_through());
    properties.keeps_output_gradient.push_back(layers_[i]->backward_keeps_output_gradient());
    properties.absorbs.push_back(layers_[i]->absorbs_gradient_term());
    properties.read_at.push_back(static_cast<int>(i));
    floats[i] = layers_[i]->output_size();
  }
  // A pooling fused into the convolution before it has its gradient read at that step.
  for (std::size_t i : fused) properties.read_at[i + 1] = static_cast<int>(i);
  routes_ = plan_gradient_routes(sources, properties);
  // Each scratch slot of a step is one more gradient, live at that step alone: the slot planner
  // fits it into a buffer no gradient holds then, instead of a buffer of its own.
  GradientLifetimes lives{floats, routes_.first_write, routes_.last_read};
  const std::vector<std::vector<std::size_t>> scratch_entries = add_scratch_lifetimes(lives);
  const GradientSlots slots = plan_gradient_slots(lives.floats, lives.first_write, lives.last_read);
  const AllocationPurpose purpose(fmt::format(
      "the layers' output gradients and their sums' scratch ({} buffers shared by {} layers) for "
      "batch {}",
      slots.capacity.size(), n, max_batch_));
  for (std::size_t capacity : slots.capacity)
    gradient_buffers_.emplace_back(*backend_, static_cast<std::size_t>(max_batch_) * capacity);
  const auto buffer_of = [&](std::size_t entry) {
    return gradient_buffers_[static_cast<std::size_t>(slots.slot_of[entry])].data();
  };
  for (std::size_t i = 0; i < n; ++i)
    output_gradient_.push_back(buffer_of(static_cast<std::size_t>(routes_.owner[i])));
  for (std::size_t i = 0; i < n; ++i)
    if (routes_.absorbed[i] >= 0)
      layers_[i]->absorb_gradient_term(
          output_gradient_[static_cast<std::size_t>(routes_.absorbed[i])]);
  scratch_.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t entry : scratch_entries[i]) scratch_[i].push_back(buffer_of(entry));
}

// Appends to `lives` one entry per scratch slot of each step (written and added at that step),
// and returns each step's entries in slot order.
std::vector<std::vector<std::size_t>> Model::add_scratch_lifetimes(GradientLifetimes& lives) const {
  std::vector<std::vector<std::size_t>> entries(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    for (const GradientRoutes::Sum& sum : routes_.sums_after[i]) {
      if (sum.from_slot < 0) continue;
      const auto slot = static_cast<std::size_t>(sum.from_slot);
      if (entries[i].size() <= slot) entries[i].resize(slot + 1);
      entries[i][slot] = lives.floats.size();
      lives.floats.push_back(layers_[static_cast<std::size_t>(sum.into)]->output_size());
      lives.first_write.push_back(static_cast<int>(i));
      lives.last_read.push_back(static_cast<int>(i));
    }
  }
  return entries;
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

// The activation layers that run inside the batch normalization before them
// (BatchNormalizationLayer::fuse_activation): an elementwise activation whose input is a batch
// normalization read by it alone. The fused op computes the same values in one pass instead of
// two, and its backward applies the activation's gradient inside batch normalization's two passes.
std::vector<std::size_t> Model::batchnorm_fusions(
    const std::vector<std::vector<int>>& readers) const {
  std::vector<std::size_t> fused;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const int source = layers_[i]->plan().sources.front();
    if (source == kNetworkInput || dynamic_cast<ActivationLayer*>(layers_[i].get()) == nullptr)
      continue;
    const auto s = static_cast<std::size_t>(source);
    if (dynamic_cast<BatchNormalizationLayer*>(layers_[s].get()) != nullptr &&
        readers[s] == std::vector<int>{static_cast<int>(i)} &&
        ops::activation_is_elementwise(layers_[i]->plan().activation))
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
    float* dy = output_gradient_[i];
    const std::vector<int>& sources = layers_[i]->plan().sources;
    input_gradients_.clear();
    for (std::size_t k = 0; k < sources.size(); ++k)
      input_gradients_.push_back(input_gradient(i, k, dy));
    if (merges_[i] != nullptr)
      merges_[i]->backward_inputs(dy, input_gradients_, batch);
    else
      layers_[i]->backward(source_output(sources.front()), dy, input_gradients_.front(), batch);
    for (const GradientRoutes::Sum& sum : routes_.sums_after[i]) {
      const auto into = static_cast<std::size_t>(sum.into);
      const float* from = sum.from_slot >= 0
                              ? scratch_[i][static_cast<std::size_t>(sum.from_slot)]
                              : output_gradient_[static_cast<std::size_t>(sum.from_layer)];
      backend_->axpy(static_cast<std::size_t>(batch) * layers_[into]->output_size(), 1.0f, from,
                     output_gradient_[into]);
    }
  }
}

float* Model::input_gradient(std::size_t i, std::size_t k, float* dy) {
  const GradientRoutes::Input& route = routes_.inputs[i][k];
  switch (route.mode) {
    case GradientRoutes::Mode::kNone:
      return nullptr;
    case GradientRoutes::Mode::kStraight:
      return output_gradient_[static_cast<std::size_t>(layers_[i]->plan().sources[k])];
    case GradientRoutes::Mode::kScratch:
      return scratch_[i][static_cast<std::size_t>(route.scratch_slot)];
    case GradientRoutes::Mode::kInPlace:
      return dy;
  }
  return nullptr;
}

}  // namespace dl
