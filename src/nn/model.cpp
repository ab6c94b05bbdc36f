#include "nn/model.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "nn/convolution_layer.hpp"
#include "nn/layer_registry.hpp"
#include "nn/output_layer.hpp"
#include "nn/subsampling_layer.hpp"

namespace dl {

std::vector<std::unique_ptr<Layer>> build_layers(const std::vector<PlannedLayer>& plan) {
  std::vector<std::unique_ptr<Layer>> layers;
  for (std::size_t i = 0; i < plan.size(); ++i)
    layers.push_back(layer_kind(plan[i].config.type).make(plan[i], i));
  DL_CHECK(!layers.empty() && layers.back()->plan().config.type == LayerType::kOutput,
           "the layer plan must end with an output layer");
  return layers;
}

std::string network_signature(const std::vector<std::unique_ptr<Layer>>& layers) {
  std::string s;
  for (const auto& l : layers) {
    if (!s.empty()) s += ',';
    s += fmt::format("{}:{}", layer_kind(l->plan().config.type).name, l->parameter_count());
  }
  return s;
}

std::string layer_table(const Config& config) {
  const std::vector<PlannedLayer> plan = plan_layers(config);
  const auto layers = build_layers(plan);
  std::string out = fmt::format("{:<4}{:<22}{:<20}{:<12}{:<12}{:>12}\n", "#", "name", "type",
                                "input", "output", "parameters");
  std::size_t total = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& p = layers[i]->plan();
    total += layers[i]->parameter_count();
    out += fmt::format("{:<4}{:<22}{:<20}{:<12}{:<12}{:>12}\n", i, p.config.name,
                       layer_kind(p.config.type).name, p.input.str(), p.output.str(),
                       layers[i]->parameter_count());
  }
  out += fmt::format("total parameters: {}\n", total);
  return out;
}

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
  std::size_t offset = 0;
  std::size_t workspace_floats = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    // The layer's outputs, their gradients and its own buffers (masks, argmax).
    const AllocationPurpose purpose(
        fmt::format("the activations of layer {} ({}, {} values per sample) for batch {}", i,
                    layer_kind(layer.plan().config.type).name, layer.output_size(), max_batch));
    layer.bind(backend, params_.data() + offset, grads_.data() + offset, max_batch);
    offset += layer.parameter_count();
    output_grads_.emplace_back(backend, static_cast<std::size_t>(max_batch) * layer.output_size());
    workspace_floats = std::max(workspace_floats, layer.workspace_floats());
  }
  {
    const AllocationPurpose purpose(
        fmt::format("the convolutions' shared workspace ({} values) for batch {}", workspace_floats,
                    max_batch));
    workspace_ = FloatBuffer(backend, workspace_floats);
  }
  for (auto& layer : layers_) layer->use_workspace(workspace_.data());
  fuse_pooling_into_convolutions();
}

// A convolution followed by a pooling layer runs both (ConvolutionLayer::pool_with): on the CPU,
// each convolution task pools its own samples while they are in its cache.
void Model::fuse_pooling_into_convolutions() {
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    auto* convolution = dynamic_cast<ConvolutionLayer*>(layers_[i].get());
    auto* pooling = dynamic_cast<SubsamplingLayer*>(layers_[i + 1].get());
    // The fused op keeps the activation's output alone, so activations that read their input
    // run unfused.
    if (convolution != nullptr && pooling != nullptr &&
        !ops::activation_reads_input(convolution->plan().activation)) {
      convolution->pool_with(*pooling, output_grads_[i + 1].data());
    }
  }
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
  const float* x = input_.data();
  for (auto& layer : layers_) {
    layer->forward(x, batch, ctx);
    x = layer->output();
  }
}

void Model::compute_loss(int batch) {
  const std::size_t last = layers_.size() - 1;
  static_cast<OutputLayer&>(*layers_[last])
      .loss(labels_.data(), batch, 0.0f, output_grads_[last].data(), loss_sum_.data());
}

void Model::backward(int batch, float grad_scale) {
  const std::size_t last = layers_.size() - 1;
  static_cast<OutputLayer&>(*layers_[last])
      .loss(labels_.data(), batch, grad_scale, output_grads_[last].data(), loss_sum_.data());
  for (std::size_t i = last + 1; i-- > 0;) {
    const float* x = i == 0 ? input_.data() : layers_[i - 1]->output();
    float* dx = i == 0 ? nullptr : output_grads_[i - 1].data();
    layers_[i]->backward(x, output_grads_[i].data(), dx, batch);
  }
}

}  // namespace dl
