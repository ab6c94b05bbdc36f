// The network without a backend: its layers unbound, the signature a checkpoint records, and the
// table `validate`, the console and the report show.
#include <fmt/format.h>

#include "config/text_match.hpp"
#include "core/error.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_registry.hpp"
#include "nn/model.hpp"

namespace dl {

namespace {

constexpr const char* kRowFormat = "{:<4}{:<22}{:<20}{:<24}{:<12}{:>12}\n";

}  // namespace

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
  std::string out = fmt::format(kRowFormat, "#", "name", "type", "inputs", "output", "parameters");
  out +=
      fmt::format(kRowFormat, "", kNetworkInputName, "", "", plan.front().inputs.front().str(), "");
  std::size_t total = 0, trainable = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& p = layers[i]->plan();
    total += layers[i]->parameter_count();
    for (const ParameterSegment& s : layers[i]->parameter_segments())
      if (s.trainable) trainable += s.count;
    out += fmt::format(kRowFormat, i, p.config.name, layer_kind(p.config.type).name,
                       join_words(p.source_names), p.output.str(), layers[i]->parameter_count());
  }
  out += fmt::format("total parameters: {}\n", total);
  // What PyTorch's sum(p.numel() for p in model.parameters()) counts: batch normalization's
  // running statistics are buffers there (Keras's summary counts them, as the total does).
  if (trainable != total)
    out += fmt::format(
        "trainable parameters: {} (the rest: batch normalization's running mean "
        "and variance)\n",
        trainable);
  return out;
}

}  // namespace dl
