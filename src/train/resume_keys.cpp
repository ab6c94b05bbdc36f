#include "train/resume_keys.hpp"

#include <exception>
#include <iterator>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/config_loader.hpp"

namespace dl {

namespace {

constexpr const char* kMetadataPrefix = "resume_key.";
// Not a config key: the job's process count, which with parallel.workers shards the data.
constexpr const char* kRanksKey = "parallel.ranks";

// Keys (flattened, "layers.0.dense.nOut") that decide which samples a position in the run means,
// or what the model is.
bool decides_data_order(const std::string& key) {
  for (const char* prefix : {"batchSize", "seed", "data.", "inputType.", "layers.",
                             "parallel.workers", "parallel.mode"}) {
    if (key.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Of those, the keys that decide what a trained network computes: a model file records only these.
// A layer's weightInit, batch normalization's decay and dropOut act while training alone, so a
// config that changes them still describes the saved model.
bool decides_network(const std::string& key) {
  const auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return key.size() >= t.size() && key.compare(key.size() - t.size(), t.size(), t) == 0;
  };
  if (ends_with(".weightInit") || ends_with(".decay") || ends_with(".dropOut")) return false;
  return key.rfind("inputType.", 0) == 0 || key.rfind("layers.", 0) == 0;
}

// Flattened layer keys with each layer's name and inputs spelled out where left to their
// defaults ("<kind><index>", and the layer before or "input"): a config that writes a default
// describes the same network as one that leaves it out, and a file recorded either way compares
// equal to either (`inputs: stem_act` on the layer after stem_act was refused as another network).
void spell_out_layer_defaults(std::map<std::string, std::string>& keys) {
  constexpr std::string_view kLayers = "layers.", kName = ".name", kInputs = ".inputs.";
  std::map<int, std::string> kind_of, name_of;
  std::set<int> has_inputs;
  for (const auto& [key, value] : keys) {
    if (key.rfind(kLayers, 0) != 0) continue;
    const std::size_t dot = key.find('.', kLayers.size());
    const std::size_t kind_end = key.find('.', dot + 1);
    if (dot == std::string::npos || kind_end == std::string::npos) continue;
    const std::string index_text = key.substr(kLayers.size(), dot - kLayers.size());
    if (index_text.empty() || index_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const int index = std::stoi(index_text);
    const std::string kind = key.substr(dot + 1, kind_end - dot - 1);
    const std::string field = key.substr(kind_end);
    if (field == kName) {
      kind_of[index] = kind;
      name_of[index] = value == "~" ? kind + index_text : value;
    }
    if (field.rfind(kInputs, 0) == 0) has_inputs.insert(index);
  }
  for (const auto& [index, kind] : kind_of) {
    const std::string prefix = fmt::format("layers.{}.{}", index, kind);
    keys[prefix + std::string(kName)] = name_of[index];
    if (has_inputs.count(index) != 0) continue;
    const auto before = name_of.find(index - 1);
    keys[prefix + std::string(kInputs) + "0"] =
        index == 0 || before == name_of.end() ? "input" : before->second;
  }
}

std::map<std::string, std::string> resume_keys(const Config& config, int ranks) {
  std::map<std::string, std::string> keys;
  for (auto& [key, value] : flat_config(config))
    if (decides_data_order(key)) keys.emplace(key, std::move(value));
  spell_out_layer_defaults(keys);
  keys[kRanksKey] = std::to_string(ranks);
  return keys;
}

std::map<std::string, std::string> network_keys(const Config& config) {
  std::map<std::string, std::string> keys = resume_keys(config, 1);
  for (auto it = keys.begin(); it != keys.end();)
    it = decides_network(it->first) ? std::next(it) : keys.erase(it);
  return keys;
}

// The recorded keys of `state` that `wanted` accepts, without their metadata prefix.
template <typename Wanted>
std::map<std::string, std::string> saved_keys(const CheckpointState& state, Wanted wanted) {
  std::map<std::string, std::string> saved;
  const std::string prefix = kMetadataPrefix;
  for (const auto& [key, value] : state.metadata) {
    if (key.rfind(prefix, 0) == 0 && wanted(key.substr(prefix.size())))
      saved[key.substr(prefix.size())] = value;
  }
  spell_out_layer_defaults(saved);
  return saved;
}

std::vector<std::string> differences(const std::map<std::string, std::string>& saved,
                                     const std::map<std::string, std::string>& now) {
  std::vector<std::string> changed;
  for (const auto& [key, value] : saved) {
    const auto it = now.find(key);
    const std::string current = it == now.end() ? "(none)" : it->second;
    if (current != value) changed.push_back(key + ": " + value + " -> " + current);
  }
  for (const auto& [key, value] : now) {
    if (saved.count(key) == 0) changed.push_back(key + ": (none) -> " + value);
  }
  return changed;
}

}  // namespace

void save_resume_keys(const Config& config, int ranks, CheckpointState& state) {
  for (const auto& [key, value] : resume_keys(config, ranks))
    state.metadata[kMetadataPrefix + key] = value;
}

void save_network_keys(const Config& config, CheckpointState& state) {
  for (const auto& [key, value] : network_keys(config))
    state.metadata[kMetadataPrefix + key] = value;
}

std::vector<std::string> changed_resume_keys(const Config& config, int ranks,
                                             const CheckpointState& state) {
  const auto saved = saved_keys(state, [](const std::string&) { return true; });
  if (saved.empty()) return {};
  std::map<std::string, std::string> now = resume_keys(config, ranks);
  // Written before the rank count was recorded: compared as before (saved_layout tells).
  if (saved.count(kRanksKey) == 0) now.erase(kRanksKey);
  return differences(saved, now);
}

std::vector<std::string> changed_network_keys(const Config& config, const CheckpointState& state) {
  const auto saved = saved_keys(state, decides_network);
  if (saved.empty()) return {};
  return differences(saved, network_keys(config));
}

std::optional<JobLayout> saved_layout(const CheckpointState& state) {
  const auto ranks = state.metadata.find(std::string(kMetadataPrefix) + kRanksKey);
  const auto workers = state.metadata.find(std::string(kMetadataPrefix) + "parallel.workers");
  if (ranks == state.metadata.end() || workers == state.metadata.end()) return std::nullopt;
  try {
    return JobLayout{std::stoi(ranks->second), std::stoi(workers->second)};
  } catch (const std::exception&) {
    return std::nullopt;  // not a number: changed_resume_keys names the key
  }
}

std::string describe(const JobLayout& layout) {
  return fmt::format("{} rank{} x {} worker{}", layout.ranks, layout.ranks == 1 ? "" : "s",
                     layout.workers, layout.workers == 1 ? "" : "s");
}

}  // namespace dl
