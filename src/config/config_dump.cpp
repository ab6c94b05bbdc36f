#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/config_loader.hpp"
#include "config/config_schema.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"

namespace dl {

std::string dump_config_yaml(const Config& config) {
  YAML::Emitter out;
  write_fields(out, config_fields(), config);
  if (!out.good()) throw InternalError("cannot write the config as YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

std::uint64_t config_hash(const Config& config) {
  return fnv1a(dump_config_yaml(config));
}

}  // namespace dl
