// The one schema: every key of the YAML config, with its type, range and the Config member it
// sets, as tables of Fields (schema_field.hpp); each layer kind's keys are declared with the kind
// (nn/layer_registry.hpp). docs/CONFIG.md documents the same keys.
#pragma once

#include "config/config.hpp"
#include "config/schema_field.hpp"

namespace dl {

// The top level of a config file; nested sections are Fields of it.
const FieldTable<Config>& config_fields();

// Expands the shorthands the schema accepts into their full form, so overrides and validation
// see one shape: `updater: adam` becomes `updater: {type: adam}`.
void expand_shorthands(YAML::Node& root);

}  // namespace dl
