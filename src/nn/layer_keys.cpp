#include "nn/layer_keys.hpp"

#include <algorithm>

#include "config/config_limits.hpp"
#include "core/error.hpp"

namespace dl {

namespace {

using config_limits::kMaxFeatureSize;
using config_limits::kMaxLayerWidth;
using config_limits::kMaxSpatialExtent;

constexpr int kPairSize = 2;
// The key every kind accepts: any layer may read other layers than the one before it.
constexpr std::string_view kEveryKindKey = "inputs";

// kernelSize, stride, padding: one integer for both dimensions, or [height, width].
Field<LayerConfig> pair_field(const char* key, int (LayerConfig::*member)[kPairSize], int min,
                              int max) {
  return {key,
          [key, member, min, max](ReadContext& ctx, const std::string& path, const YAML::Node& node,
                                  LayerConfig& layer) {
            const IntRange range{min, max};
            int* values = layer.*member;
            if (node.IsSequence()) {
              if (node.size() != kPairSize)
                ctx.fail(path, node,
                         fmt::format("{} must be one integer or a list of two [height, width], "
                                     "got a list of {}",
                                     path, node.size()),
                         fmt::format("write e.g. {}: [{}, {}] or {}: {}", key, values[0], values[1],
                                     key, values[0]));
              for (std::size_t i = 0; i < kPairSize; ++i)
                values[i] = static_cast<int>(
                    read_integer(ctx, join_path(path, std::to_string(i)), node[i], range));
            } else {
              values[0] = values[1] = static_cast<int>(read_integer(ctx, path, node, range));
            }
          },
          [member](YAML::Emitter& out, const LayerConfig& layer) {
            const int* values = layer.*member;
            out << YAML::Flow << YAML::BeginSeq << values[0] << values[1] << YAML::EndSeq;
          }};
}

// The name: no value means the default "<type><index>".
Field<LayerConfig> layer_name_field() {
  return {
      "name",
      [](ReadContext& ctx, const std::string& path, const YAML::Node& node, LayerConfig& layer) {
        layer.name = node.IsNull() ? std::string() : read_text(ctx, path, node);
      },
      [](YAML::Emitter& out, const LayerConfig& layer) {
        if (layer.name.empty())
          out << YAML::Null;
        else
          out << YAML::DoubleQuoted << layer.name;
      }};
}

// One name of `inputs`. read_text's own advice ("write a string", "not a map or a list") would
// send the user away from the list that inputs takes, so its shapes are named here.
std::string read_input_name(const ReadContext& ctx, const std::string& path,
                            const YAML::Node& node) {
  const std::string shapes =
      "write one layer name (inputs: conv1) or a flat list of them (inputs: [conv1, shortcut])";
  if (!node.IsDefined() || node.IsNull())
    ctx.fail(path, node, fmt::format("{} has no value", path),
             shapes + ", or remove the key to read the layer before");
  if (!node.IsScalar())
    ctx.fail(path, node,
             fmt::format("{} must be a layer name, got {}", path, describe_node(node)), shapes);
  return read_text(ctx, path, node);
}

// inputs: one layer name or a list of them; unset (the layer before) is left out of the dump.
Field<LayerConfig> layer_inputs_field() {
  Field<LayerConfig> field{
      std::string(kEveryKindKey),
      [](ReadContext& ctx, const std::string& path, const YAML::Node& node, LayerConfig& layer) {
        layer.inputs.clear();
        if (!node.IsSequence()) {
          layer.inputs.push_back({read_input_name(ctx, path, node), ctx.location(path, node)});
          return;
        }
        if (node.size() == 0)
          ctx.fail(path, node, fmt::format("{} is an empty list", path),
                   "name the layers this one reads, e.g. inputs: [conv1, shortcut], or remove "
                   "the key to read the layer before");
        for (std::size_t i = 0; i < node.size(); ++i) {
          const std::string item = join_path(path, std::to_string(i));
          layer.inputs.push_back(
              {read_input_name(ctx, item, node[i]), ctx.location(item, node[i])});
        }
      },
      [](YAML::Emitter& out, const LayerConfig& layer) {
        out << YAML::Flow << YAML::BeginSeq;
        for (const LayerInput& in : layer.inputs) out << YAML::DoubleQuoted << in.name;
        out << YAML::EndSeq;
      }};
  field.omitted_when = [](const LayerConfig& layer) { return layer.inputs.empty(); };
  return field;
}

// hasBias: written to the dump only where it is false, so that configs without the key keep
// their dump (and the run identity hashed from it).
Field<LayerConfig> has_bias_field() {
  Field<LayerConfig> field = bool_field("hasBias", &LayerConfig::hasBias);
  field.omitted_when = [](const LayerConfig& layer) { return layer.hasBias; };
  return field;
}

const FieldTable<LayerConfig>& all_layer_keys() {
  static const FieldTable<LayerConfig> table{
      layer_name_field(),
      layer_inputs_field(),
      // 0: inferred from the layer before (the dump writes the inferred value).
      integer_field("nIn", &LayerConfig::nIn, 0, kMaxFeatureSize),
      integer_field("nOut", &LayerConfig::nOut, 1, kMaxLayerWidth),
      enum_field("poolingType", &LayerConfig::poolingType),
      pair_field("kernelSize", &LayerConfig::kernelSize, 1, kMaxSpatialExtent),
      pair_field("stride", &LayerConfig::stride, 1, kMaxSpatialExtent),
      pair_field("padding", &LayerConfig::padding, 0, kMaxSpatialExtent),
      enum_field("convolutionMode", &LayerConfig::convolutionMode),
      optional_enum_field("activation", &LayerConfig::activation),
      optional_enum_field("weightInit", &LayerConfig::weightInit),
      has_bias_field(),
      enum_field("lossFunction", &LayerConfig::lossFunction),
      real_field("labelSmoothing", &LayerConfig::labelSmoothing, RealRange::from_below(0.0, 1.0)),
      real_field("dropOut", &LayerConfig::dropOut, RealRange::above_up_to(0.0, 1.0)),
      real_field("decay", &LayerConfig::decay, RealRange::from_below(0.0, 1.0)),
      real_field("eps", &LayerConfig::eps, RealRange::above(0.0)),
  };
  return table;
}

}  // namespace

FieldTable<LayerConfig> layer_keys(std::initializer_list<std::string_view> keys,
                                   std::initializer_list<RequiredKey> required) {
  FieldTable<LayerConfig> selected;
  for (const Field<LayerConfig>& f : all_layer_keys()) {
    const bool every_kind = f.key == kEveryKindKey;
    if (!every_kind && std::find(keys.begin(), keys.end(), f.key) == keys.end()) continue;
    selected.push_back(f);
    const auto fix = std::find_if(required.begin(), required.end(),
                                  [&f](const RequiredKey& r) { return r.key == f.key; });
    if (fix != required.end()) selected.back().required_fix = std::string(fix->fix);
  }
  DL_CHECK(selected.size() == keys.size() + 1, "every layer key named is in all_layer_keys");
  return selected;
}

}  // namespace dl
