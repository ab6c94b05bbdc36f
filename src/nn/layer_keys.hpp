// Every config key a layer kind may accept, each with its type and range, written once; a kind
// selects the keys it accepts (nn/layer_registry.hpp).
#pragma once

#include <initializer_list>
#include <string_view>

#include "config/layer_config.hpp"
#include "config/schema_field.hpp"

namespace dl {

// A key a kind requires (it has no default), with what to write when it is missing.
struct RequiredKey {
  std::string_view key;
  std::string_view fix;
};

// The keys named and `inputs` (every kind's), in the catalogue's order (the dump's order);
// `required` names those of them without a default.
FieldTable<LayerConfig> layer_keys(std::initializer_list<std::string_view> keys,
                                   std::initializer_list<RequiredKey> required = {});

}  // namespace dl
