#include "nn/layer_graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string>
#include <vector>

#include "config/read_context.hpp"
#include "config/text_match.hpp"
#include "core/message_text.hpp"
#include "nn/layer_plan.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

// "layer 3 'add1' (add)": how the errors name a layer.
std::string describe_layer(const Config& config, const LayerSources& g, std::size_t i) {
  return fmt::format("layer {} '{}' ({})", i, quoted_value(g.names[i]),
                     layer_kind(config.layers[i].type).name);
}

// The names a layer listed at `index` may read: "input" and every layer above it.
std::vector<std::string> readable_names(const LayerSources& g, std::size_t index) {
  std::vector<std::string> names{std::string(kNetworkInputName)};
  names.insert(names.end(), g.names.begin(), g.names.begin() + static_cast<long>(index));
  return names;
}

void check_names(const Config& config, const LayerSources& g) {
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < g.names.size(); ++i) {
    const SourceLocation& where = config.layers[i].where;
    if (g.names[i] == kNetworkInputName)
      fail_at(where,
              fmt::format("{} is named '{}', the name of the network's input",
                          describe_layer(config, g, i), kNetworkInputName),
              "give the layer another name");
    const auto [it, added] = first.emplace(g.names[i], i);
    if (added) continue;
    // A layer without `name` is called <type><index>, which a name given elsewhere may repeat
    // (a Keras user's 'dense1'): say which of the two names was not written.
    const std::size_t earlier = it->second;
    const bool default_here = config.layers[i].name.empty();
    const bool default_there = config.layers[earlier].name.empty();
    std::string whose = fmt::format("has the name of layer {}", earlier);
    if (default_here)
      whose = fmt::format(
          "has the name given to layer {}, and is itself unnamed (the default "
          "name is the type and the index)",
          earlier);
    else if (default_there)
      whose = fmt::format("has the default name of layer {} (its type and index), which is unnamed",
                          earlier);
    fail_at(where,
            fmt::format("{} {}; inputs name layers, so each name is one layer's",
                        describe_layer(config, g, i), whose),
            default_here || default_there ? "name the unnamed layer, or rename the other"
                                          : "give each layer its own name");
  }
}

// `text` split at commas and blanks, when it holds two or more words that all name layers (or
// the input): "a, b" written as one name where a list was meant.
std::vector<std::string> names_run_together(const std::string& text,
                                            const std::map<std::string, int>& by_name) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text + ",") {
    if (c != ',' && c != ' ' && c != '\t') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  for (const std::string& w : words) {
    if (w != kNetworkInputName && by_name.count(w) == 0) return {};
  }
  return words.size() >= 2 ? words : std::vector<std::string>{};
}

// The --set that renamed a layer whose old name a file still reads, or "".
std::string renaming_override(const Config& config) {
  for (const LayerConfig& layer : config.layers)
    for (const std::string& o : layer.where.changed_by)
      if (o.find(".name=") != std::string::npos) return o;
  return {};
}

int resolve_one(const Config& config, const LayerSources& g, std::size_t index,
                const LayerInput& in, const std::map<std::string, int>& by_name) {
  if (in.name == kNetworkInputName) return kNetworkInput;
  const auto it = by_name.find(in.name);
  if (it == by_name.end()) {
    const auto near = closest_match(in.name, readable_names(g, index));
    const std::vector<std::string> list = names_run_together(in.name, by_name);
    const std::string renamed = renaming_override(config);
    fail_at(in.where,
            fmt::format("{} reads '{}', which is no layer of this network",
                        describe_layer(config, g, index), quoted_value(in.name)),
            !list.empty() ? fmt::format("to read several layers, write them as a YAML list: "
                                        "inputs: [{}]",
                                        quoted_value(fmt::format("{}", fmt::join(list, ", "))))
            : !renamed.empty()
                ? fmt::format("{} renamed a layer that this one may read by its old name: "
                              "rename its readers' inputs too (--set), or keep the name",
                              quoted_value(renamed))
            : near ? fmt::format("did you mean '{}'?", quoted_value(*near))
                   : fmt::format("name one of: {}", join_words(readable_names(g, index))));
  }
  if (it->second >= static_cast<int>(index))
    fail_at(in.where,
            fmt::format("{} reads '{}', {}; layers are computed in the order they are listed, so "
                        "a layer reads only layers above it (and a loop cannot be computed)",
                        describe_layer(config, g, index), quoted_value(in.name),
                        it->second == static_cast<int>(index)
                            ? std::string("itself")
                            : fmt::format("which is listed below it (layer {})", it->second)),
            "move the layers so that each comes after the layers it reads");
  return it->second;
}

void check_input_count(const Config& config, const LayerSources& g, std::size_t i) {
  const LayerKind& kind = layer_kind(config.layers[i].type);
  const std::size_t n = g.sources[i].size();
  if (kind.merges_inputs && n < 2)
    fail_at(
        config.layers[i].where,
        fmt::format("{} merges two or more inputs but reads {}", describe_layer(config, g, i), n),
        fmt::format("name the layers it merges, e.g. inputs: [{}, shortcut]",
                    i > 0 ? g.names[i - 1] : std::string(kNetworkInputName)));
  if (!kind.merges_inputs && n != 1)
    fail_at(config.layers[i].inputs.front().where,
            fmt::format("{} reads one input but names {}", describe_layer(config, g, i), n),
            "merge them first with an add or a concat layer, and read that");
}

// Every layer but the output layer must be read: a branch nobody reads would be computed and
// trained for nothing, which is a mistake in the config rather than a wish.
void check_every_output_read(const Config& config, const LayerSources& g) {
  const std::vector<std::vector<int>> readers = layer_readers(g.sources);
  for (std::size_t i = 0; i + 1 < g.names.size(); ++i) {
    if (!readers[i].empty() || config.layers[i].type == LayerType::kOutput) continue;
    fail_at(config.layers[i].where,
            fmt::format("no layer reads the output of {}", describe_layer(config, g, i)),
            fmt::format("name '{}' in a later layer's inputs, or remove the layer",
                        quoted_value(g.names[i])));
  }
}

}  // namespace

LayerSources resolve_layer_sources(const Config& config) {
  LayerSources g;
  for (std::size_t i = 0; i < config.layers.size(); ++i) {
    const LayerConfig& layer = config.layers[i];
    g.names.push_back(layer_name(layer, i));
  }
  check_names(config, g);
  std::map<std::string, int> by_name;
  for (std::size_t i = 0; i < g.names.size(); ++i) by_name[g.names[i]] = static_cast<int>(i);
  for (std::size_t i = 0; i < config.layers.size(); ++i) {
    std::vector<int> sources;
    for (const LayerInput& in : config.layers[i].inputs)
      sources.push_back(resolve_one(config, g, i, in, by_name));
    if (config.layers[i].inputs.empty())
      sources.push_back(i == 0 ? kNetworkInput : static_cast<int>(i) - 1);
    g.sources.push_back(std::move(sources));
    check_input_count(config, g, i);
  }
  check_every_output_read(config, g);
  return g;
}

std::vector<std::vector<int>> layer_readers(const std::vector<std::vector<int>>& sources) {
  std::vector<std::vector<int>> readers(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i)
    for (int s : sources[i])
      if (s != kNetworkInput) readers[static_cast<std::size_t>(s)].push_back(static_cast<int>(i));
  return readers;
}

std::string source_name(const LayerSources& graph, int s) {
  return s == kNetworkInput ? std::string(kNetworkInputName)
                            : graph.names[static_cast<std::size_t>(s)];
}

}  // namespace dl
