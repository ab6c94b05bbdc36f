// The layer registry: each layer kind declared once, as Caffe's layer registry does, with
//   - its name (the YAML key of a layer: `- convolution: {...}`),
//   - its config keys (a selection from layer_keys.hpp, which holds each key's range) and
//     defaults,
//   - its shape rule (output shape, inferred nIn, padding: nn/layer_plan.hpp),
//   - its default activation (kinds that have activation and weightInit keys), and
//   - its factory.
// A kind's declaration sits beside its Layer class (e.g. convolution_layer.cpp); the list of
// kinds is layer_registry.cpp. The config loader reads layers, and the model builds them, from
// here alone.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/layer_config.hpp"
#include "config/schema_field.hpp"
#include "nn/layer_plan.hpp"

namespace dl {

class Layer;

// Fills in the planned output shape (and nIn, nOut, padding where the kind infers them) of a
// layer from its input; reports a layer that does not fit through `shaping.fail`.
using ShapeRule = void (*)(const LayerShaping& shaping, PlannedLayer& planned);
// Makes the layer; `index` is its position in the network.
using LayerFactory = std::unique_ptr<Layer> (*)(const PlannedLayer& plan, std::size_t index);

struct LayerKind {
  LayerType type;
  std::string_view name;
  FieldTable<LayerConfig> keys;  // in dump order
  LayerConfig defaults;  // the config of a layer that sets no key (type set by the registry)
  // The activation when neither the layer nor the config's global `activation` sets one; unset
  // for kinds without activation and weightInit keys.
  std::optional<Activation> default_activation;
  ShapeRule shape;
  LayerFactory make;
  // add, concat: the kind merges two or more inputs; every other kind reads one.
  bool merges_inputs = false;
};

// Every kind, in the order the documentation lists them.
const std::vector<LayerKind>& layer_kinds();
const LayerKind& layer_kind(LayerType type);
// The kind spelled exactly `name`, or null.
const LayerKind* find_layer_kind(std::string_view name);
std::vector<std::string> layer_kind_names();

// The factory of a Layer class constructed from its plan.
template <class L>
std::unique_ptr<Layer> make_layer(const PlannedLayer& plan, std::size_t /*index*/) {
  return std::make_unique<L>(plan);
}

// The shape rule of kinds whose output has their input's shape (nOut: its channels).
void keep_shape(const LayerShaping& shaping, PlannedLayer& planned);

// The declarations, one per kind, beside each Layer class.
LayerKind convolution_layer_kind();
LayerKind subsampling_layer_kind();
LayerKind dense_layer_kind();
LayerKind output_layer_kind();
LayerKind dropout_layer_kind();
LayerKind batch_normalization_layer_kind();
LayerKind global_pooling_layer_kind();
LayerKind activation_layer_kind();
LayerKind add_layer_kind();
LayerKind concat_layer_kind();

}  // namespace dl
