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

namespace {

void flatten(const YAML::Node& node, const std::string& key,
             std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node)
      flatten(entry.second, (key.empty() ? "" : key + ".") + entry.first.as<std::string>(), out);
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      flatten(node[i], key + "." + std::to_string(i), out);
  } else {
    out[key] = node.IsNull() ? "~" : node.as<std::string>();
  }
}

}  // namespace

std::map<std::string, std::string> flat_config(const Config& config) {
  return flat_config_dump(dump_config_yaml(config));
}

std::map<std::string, std::string> flat_config_dump(const std::string& dump) {
  std::map<std::string, std::string> values;
  flatten(YAML::Load(dump), "", values);
  return values;
}

std::uint64_t config_hash(const Config& config) {
  return fnv1a(dump_config_yaml(config));
}

}  // namespace dl
