#include "config/layers_schema.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "config/foreign_words.hpp"
#include "core/message_text.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

std::string layer_where(const std::string& path, const LayerKind& kind) {
  return fmt::format("in {} ({})", path, kind.name);
}

// A key this kind lacks that another library uses (Keras's dropout `rate`, PyTorch's batch-norm
// `momentum`), which the generic message would answer with a near typo or a list of keys.
void check_foreign_keys(const ReadContext& ctx, const std::string& path, const YAML::Node& settings,
                        const LayerKind& kind) {
  if (!settings.IsMap()) return;
  for (const auto& entry : settings) {
    if (!entry.first.IsScalar()) continue;
    const std::string key = entry.first.Scalar();
    const bool known = std::any_of(kind.keys.begin(), kind.keys.end(),
                                   [&key](const auto& field) { return field.key == key; });
    if (known) continue;
    if (const auto fix = foreign_layer_key_fix(kind.type, key))
      ctx.fail(join_path(path, key), entry.first,
               fmt::format("unknown key '{}' {}", quoted_value(key), layer_where(path, kind)),
               std::string(*fix));
  }
}

constexpr std::string_view kLayerExample = "write each layer as '- dense: {nOut: 500}'";

LayerConfig read_layer(ReadContext& ctx, const std::string& path, const YAML::Node& item) {
  if (!item.IsMap())
    ctx.fail(path, item,
             fmt::format("{} must be a map with one key naming the layer type, got {}", path,
                         describe_node(item)),
             std::string(kLayerExample));
  if (item.size() == 0)
    ctx.fail(path, item,
             fmt::format("{} is an empty map; a layer is one key naming its type", path),
             std::string(kLayerExample));
  if (item.size() != 1) {
    std::vector<std::string> keys;
    for (const auto& entry : item)
      keys.push_back(entry.first.IsScalar() ? quoted_value(entry.first.Scalar()) : "?");
    ctx.fail(path, item,
             fmt::format("{} has {} keys ({}) but a layer is one key naming its type", path,
                         item.size(), join_words(keys)),
             "indent the layer's settings under its type, e.g. '- convolution:' then "
             "'    nOut: 20' on the next line");
  }
  // yaml-cpp's iterator hands out its key/value pair as a temporary: the nodes are copied (they
  // are cheap handles) rather than bound by reference to a pair that no longer exists.
  const auto entry = item.begin();
  const YAML::Node type_node = entry->first;
  const YAML::Node settings = entry->second;
  const std::string type_text = type_node.IsScalar() ? type_node.Scalar() : "?";
  const LayerKind* kind = find_layer_kind(type_text);
  if (kind == nullptr)
    fail_unknown_name(ctx, path, type_node, "layer type", type_text, "in " + path,
                      layer_kind_names());
  check_foreign_keys(ctx, path, settings, *kind);
  LayerConfig layer = kind->defaults;
  layer.where = ctx.section_location(path, item);
  read_fields(ctx, path, settings, kind->keys, layer, layer_where(path, *kind), item);
  return layer;
}

}  // namespace

Field<Config> layers_field() {
  Field<Config> field{
      "layers",
      [](ReadContext& ctx, const std::string& path, const YAML::Node& node, Config& c) {
        if (!node.IsSequence())
          ctx.fail(path, node, fmt::format("layers must be a list, got {}", describe_node(node)),
                   std::string(kLayerExample) + " on its own line starting with '- '");
        if (node.size() == 0)
          ctx.fail(path, node, "layers is empty",
                   "add the network's layers, ending with an output layer");
        c.layers.clear();
        for (std::size_t i = 0; i < node.size(); ++i)
          c.layers.push_back(read_layer(ctx, join_path(path, std::to_string(i)), node[i]));
      },
      [](YAML::Emitter& out, const Config& c) {
        out << YAML::BeginSeq;
        for (const auto& layer : c.layers) {
          const LayerKind& kind = layer_kind(layer.type);
          out << YAML::BeginMap << YAML::Key << std::string(kind.name) << YAML::Value;
          write_fields(out, kind.keys, layer);
          out << YAML::EndMap;
        }
        out << YAML::EndSeq;
      }};
  field.required_fix =
      "add a 'layers:' list, e.g. layers: [{dense: {nOut: 100}}, "
      "{output: {nOut: 10}}]";
  return field;
}

}  // namespace dl
