// The config's `layers` section: a list of one-key maps, each key a layer kind of the registry
// (nn/layer_registry.hpp), whose keys it reads with the kind's own field table and writes back
// the same way.
#pragma once

#include "config/config.hpp"
#include "config/schema_field.hpp"

namespace dl {

Field<Config> layers_field();

}  // namespace dl
