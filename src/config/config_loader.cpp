#include "config/config_loader.hpp"

#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "config/config_overrides.hpp"
#include "config/config_schema.hpp"
#include "config/read_context.hpp"
#include "config/recipe_checks.hpp"
#include "core/error.hpp"
#include "io/file_access.hpp"
#include "nn/layer_plan.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

SourceLocation mark_location(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return SourceLocation{source, 0, 0};
  return SourceLocation{source, mark.line + 1, mark.column + 1};
}

// Sees the root node of each YAML document, to count documents without building them.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { root_seen_ = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { on_node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { on_node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    on_node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    on_node(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    on_node(mark, false);
  }
  void OnMapEnd() override {}

  bool null_root() const { return null_root_; }
  const YAML::Mark& root_mark() const { return root_mark_; }

 private:
  void on_node(const YAML::Mark& mark, bool is_null) {
    if (root_seen_) return;
    root_seen_ = true;
    null_root_ = is_null;
    root_mark_ = mark;
  }

  bool root_seen_ = false;
  bool null_root_ = false;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
};

struct DocumentCount {
  std::size_t documents = 0;
  YAML::Mark second_root = YAML::Mark::null_mark();
};

// Counts the documents, throwing YAML::Exception on a syntax error in any of them. Not
// YAML::LoadAll: in yaml-cpp 0.7 it loops forever, allocating, on a stray token after a document
// (e.g. `"",`): the parser then reports empty documents at that token without ever consuming it
// (yaml-cpp issue 1040, fixed upstream in 2024). Here a second empty document at the same place
// is that token, reported as a syntax error.
DocumentCount count_documents(const std::string& text) {
  std::istringstream input(text);
  YAML::Parser parser(input);
  DocumentCounter counter;
  DocumentCount count;
  std::optional<int> empty_document_at;  // position of the last empty document
  while (parser.HandleNextDocument(counter)) {
    if (!counter.null_root()) {
      if (++count.documents == 2) count.second_root = counter.root_mark();
      empty_document_at.reset();
      continue;
    }
    if (empty_document_at == counter.root_mark().pos) {
      throw YAML::ParserException(counter.root_mark(),
                                  "unexpected token (a stray ',', ']' or '}'?)");
    }
    empty_document_at = counter.root_mark().pos;
  }
  return count;
}

// The single YAML document of a config, as a map.
YAML::Node parse_document(const std::string& text, const std::string& source) {
  YAML::Node root;
  DocumentCount count;
  try {
    root = YAML::Load(text);
    count = count_documents(text);
  } catch (const YAML::Exception& e) {
    fail_at(mark_location(source, e.mark), "YAML syntax error: " + e.msg,
            "fix the YAML at that place (indentation, a missing ':' or an unclosed bracket or "
            "quote)");
  }
  if (root.IsNull())
    fail_at(SourceLocation{source, 0, 0}, "the config is empty",
            "write a YAML map with at least inputType and layers (see configs/mnist.yaml)");
  if (count.documents > 1)
    fail_at(mark_location(source, count.second_root),
            fmt::format("the file holds {} YAML documents (separated by '---')", count.documents),
            "keep one config per file");
  if (!root.IsMap())
    fail_at(mark_location(source, root.Mark()),
            fmt::format("the top level of a config must be a map of keys, got {}",
                        root.IsSequence() ? "a list" : "the single value '" + root.Scalar() + "'"),
            "write the config as 'key: value' lines such as 'seed: 123' and 'layers:'");
  return root;
}

// A cache's largest cacheable allocation ("maximum<Where>CacheableLength") is at most its size
// ("maximum<Where>Cache").
void check_cache_limits(const ReadContext& ctx, const char* where, std::uint64_t cacheable_length,
                        std::uint64_t cache) {
  if (cacheable_length <= cache) return;
  const std::string length_key = fmt::format("memory.maximum{}CacheableLength", where);
  fail_at(ctx.remembered(length_key),
          fmt::format("{} ({} bytes) is larger than memory.maximum{}Cache ({} bytes)", length_key,
                      cacheable_length, where, cache),
          "make the largest cacheable allocation at most the cache size");
}

// Checks that involve more than one key.
void check_combinations(const ReadContext& ctx, const Config& config) {
  if (config.backend == BackendKind::kCpu && config.dtype != DType::kFloat)
    fail_at(ctx.remembered("dtype"),
            fmt::format("dtype {} is not available with backend cpu (the CPU backend trains in "
                        "FLOAT only)",
                        enum_name(config.dtype)),
            "set dtype: FLOAT or backend: cuda");
  const MemoryConfig& m = config.memory;
  check_cache_limits(ctx, "Device", m.maximumDeviceCacheableLength, m.maximumDeviceCache);
  check_cache_limits(ctx, "Host", m.maximumHostCacheableLength, m.maximumHostCache);
  check_data_source(ctx, config);
  check_schedule(ctx, config);
}

// Writes the plan's inferred values into the config's layers; checks that names are unique.
void resolve_layers(Config& config) {
  const std::vector<PlannedLayer> plan = plan_layers(config);
  std::set<std::string> names;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    LayerConfig& layer = config.layers[i];
    layer = plan[i].config;
    if (layer_kind(layer.type).default_activation) {
      layer.activation = plan[i].activation;
      layer.weightInit = plan[i].weightInit;
    }
    if (!names.insert(layer.name).second)
      fail_at(layer.where,
              fmt::format("layer {} is named '{}' like an earlier layer", i, layer.name),
              "give each layer a different name");
  }
}

}  // namespace

Config load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  return load_config_string(read_config_text(path), path, overrides);
}

Config load_config_string(const std::string& yaml_text, const std::string& source_name,
                          const std::vector<std::string>& overrides) {
  YAML::Node root = parse_document(yaml_text, source_name);
  expand_shorthands(root);
  std::vector<OverrideOrigin> origins;
  for (const auto& text : overrides) origins.push_back(apply_override(root, text));
  expand_shorthands(root);  // an override may use a shorthand too ("--set updater=adam")
  ReadContext ctx(source_name, std::move(origins));
  Config config;
  config.sourcePath = source_name;
  read_fields(ctx, "", root, config_fields(), config);
  check_combinations(ctx, config);
  config.updater.learningRate = effective_learning_rate(config.updater);
  config.lossScaling.mode = effective_loss_scaling_mode(config);
  resolve_layers(config);
  return config;
}

}  // namespace dl
