#include "nn/layer_registry.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dl {

namespace {

LayerKind registered(LayerKind kind) {
  kind.defaults.type = kind.type;
  return kind;
}

}  // namespace

const std::vector<LayerKind>& layer_kinds() {
  static const std::vector<LayerKind> kinds{
      registered(convolution_layer_kind()),    registered(subsampling_layer_kind()),
      registered(dense_layer_kind()),          registered(output_layer_kind()),
      registered(dropout_layer_kind()),        registered(batch_normalization_layer_kind()),
      registered(global_pooling_layer_kind()), registered(activation_layer_kind()),
      registered(add_layer_kind()),            registered(concat_layer_kind()),
  };
  return kinds;
}

const LayerKind& layer_kind(LayerType type) {
  const auto& kinds = layer_kinds();
  const auto it = std::find_if(kinds.begin(), kinds.end(),
                               [type](const LayerKind& k) { return k.type == type; });
  DL_CHECK(it != kinds.end(), "every LayerType is registered in layer_registry.cpp");
  return *it;
}

const LayerKind* find_layer_kind(std::string_view name) {
  const auto& kinds = layer_kinds();
  const auto it = std::find_if(kinds.begin(), kinds.end(),
                               [name](const LayerKind& k) { return k.name == name; });
  return it == kinds.end() ? nullptr : &*it;
}

void keep_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  planned.output = shaping.input();
  planned.config.nOut = shaping.input().channels;
}

std::vector<std::string> layer_kind_names() {
  std::vector<std::string> names;
  for (const LayerKind& k : layer_kinds()) names.emplace_back(k.name);
  return names;
}

}  // namespace dl
