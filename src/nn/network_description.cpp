// The network without a backend: its layers unbound, the signature a checkpoint records, and the
// table `validate`, the console and the report show.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "config/text_match.hpp"
#include "core/error.hpp"
#include "core/split_text.hpp"
#include "nn/layer_graph.hpp"
#include "nn/layer_registry.hpp"
#include "nn/model.hpp"

namespace dl {

namespace {

// One row: index, name, type, inputs, output shape, parameters. The index column widens for a
// thousand layers or more, and the name and inputs columns past their usual 22 and 24 characters
// for a longer name or list of inputs (Keras's 'batch_normalization_12' alone is 22), which ran
// into the next column; but only up to kWidest: one name or list longer than that (a merge of
// 2,000 inputs) runs past its own column in its own row rather than padding every row to it.
struct TableColumns {
  std::size_t index = 4, name = 22, inputs = 24;

  std::string row(const std::string& index, const std::string& name, std::string_view type,
                  const std::string& inputs, const std::string& output,
                  const std::string& parameters) const {
    return fmt::format("{:<{}}{:<{}}{:<20}{:<{}}{:<12}{:>12}\n", index, this->index, name,
                       this->name, type, inputs, this->inputs, output, parameters);
  }
};

TableColumns table_columns(const std::vector<PlannedLayer>& plan) {
  TableColumns columns;
  constexpr std::size_t kGap = 2, kWidest = 64;
  columns.index = std::max(columns.index, std::to_string(plan.size()).size() + kGap);
  for (const PlannedLayer& p : plan) {
    columns.name = std::clamp(p.config.name.size() + kGap, columns.name, kWidest);
    columns.inputs = std::clamp(join_words(p.source_names).size() + kGap, columns.inputs, kWidest);
  }
  return columns;
}

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

std::string signature_difference(const std::string& saved, const std::string& now) {
  const auto described = [](const std::string& part) {
    const std::size_t colon = part.find(':');
    if (colon == std::string::npos) return part;
    return fmt::format("{} with {} parameters", part.substr(0, colon), part.substr(colon + 1));
  };
  const std::vector<std::string> a = split_text(saved, ','), b = split_text(now, ',');
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i])
      return fmt::format("layers.{}: {} -> {}", i, described(a[i]), described(b[i]));
  if (a.size() != b.size()) return fmt::format("{} layers -> {}", a.size(), b.size());
  return fmt::format("{} -> {}", saved, now);
}

std::string layer_table(const Config& config) {
  const std::vector<PlannedLayer> plan = plan_layers(config);
  const auto layers = build_layers(plan);
  const TableColumns columns = table_columns(plan);
  std::string out = columns.row("#", "name", "type", "inputs", "output", "parameters");
  out += columns.row("", std::string(kNetworkInputName), "", "", plan.front().inputs.front().str(),
                     "");
  std::size_t total = 0, trainable = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const PlannedLayer& p = layers[i]->plan();
    total += layers[i]->parameter_count();
    for (const ParameterSegment& s : layers[i]->parameter_segments())
      if (s.trainable) trainable += s.count;
    out += columns.row(std::to_string(i), p.config.name, layer_kind(p.config.type).name,
                       join_words(p.source_names), p.output.str(),
                       std::to_string(layers[i]->parameter_count()));
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
