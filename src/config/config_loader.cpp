#include "config/config_loader.hpp"

#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "config/config_overrides.hpp"
#include "config/config_schema.hpp"
#include "config/read_context.hpp"
#include "config/recipe_checks.hpp"
#include "config/yaml_document.hpp"
#include "config/yaml_syntax_cause.hpp"
#include "core/error.hpp"
#include "core/message_text.hpp"
#include "io/file_access.hpp"
#include "nn/layer_plan.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

SourceLocation mark_location(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return SourceLocation{source, 0, 0};
  return SourceLocation{source, mark.line + 1, mark.column + 1};
}

// The single YAML document of a config, as a map.
YAML::Node parse_document(const std::string& text, const std::string& source) {
  const auto control = find_control_character(text);
  if (control && control->text == kLoneCarriageReturn)
    fail_at(SourceLocation{source, control->line, control->column},
            "a line ends with a carriage return alone (\\r without \\n: old Mac line ends), "
            "which this YAML reader does not take as a line break",
            "save the file with LF (or CRLF) line ends");
  if (control)
    fail_at(SourceLocation{source, control->line, control->column},
            fmt::format("the config holds the control character {}, which YAML text may not hold",
                        control->text),
            "remove it (a config is plain text; a value may not hold control characters)");
  YAML::Node root;
  DocumentCount count;
  try {
    root = YAML::Load(text);
    count = count_documents(text);
    resolve_merge_keys(root);
  } catch (const YamlDocumentError& e) {
    fail_at(mark_location(source, e.mark()), e.what(), e.fix());
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's guard against a stack overflow says only "bad file", at the place it gave up.
    fail_at(mark_location(source, e.mark),
            "lists or maps nest here deeper than the YAML reader follows (hundreds of levels)",
            "a config nests a few levels: look for '[' or '{' opened and not closed, or for "
            "lines indented further and further");
  } catch (const YAML::Exception& e) {
    const SourceLocation reported = mark_location(source, e.mark);
    if (const auto cause = find_yaml_syntax_cause(text, reported.line, e.msg))
      fail_at(SourceLocation{source, cause->line, cause->column},
              "YAML syntax error: " + cause->what, cause->fix);
    fail_at(reported, "YAML syntax error: " + quoted_value(e.msg),
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
    fail_at(
        mark_location(source, root.Mark()),
        fmt::format("the top level of a config must be a map of keys, got {}",
                    root.IsSequence() ? "a list"
                                      : "the single value '" + quoted_value(root.Scalar()) + "'"),
        "write the config as 'key: value' lines such as 'seed: 123' and 'layers:'");
  if (const auto tagged = find_explicit_tag(root))
    fail_at(mark_location(source, tagged->mark),
            fmt::format("{} carries the YAML tag '{}', which dl-train does not read", tagged->path,
                        tagged->tag),
            explicit_tag_fix());
  return root;
}

// A cache's largest cacheable allocation ("maximum<Where>CacheableLength") is at most its size
// ("maximum<Where>Cache").
void check_cache_limits(const ReadContext& ctx, const char* where, std::uint64_t cacheable_length,
                        std::uint64_t cache) {
  if (cacheable_length <= cache) return;
  const std::string length_key = fmt::format("memory.maximum{}CacheableLength", where);
  const std::string cache_key = fmt::format("memory.maximum{}Cache", where);
  fail_at(ctx.remembered({length_key, cache_key}),
          fmt::format("{} ({} bytes) is larger than {} ({} bytes)", length_key, cacheable_length,
                      cache_key, cache),
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
  check_updater(ctx, config);
}

// Writes the plan's inferred values into the config's layers (the plan has checked the graph:
// names unique, inputs known and above their reader).
void resolve_layers(Config& config) {
  const std::vector<PlannedLayer> plan = plan_layers(config);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    LayerConfig& layer = config.layers[i];
    layer = plan[i].config;
    if (layer_kind(layer.type).default_activation) {
      layer.activation = plan[i].activation;
      layer.weightInit = plan[i].weightInit;
    }
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
  // An override may use a shorthand too ("--set updater=adam"), which a later one may go into
  // ("--set updater.learningRate=0.5"), as it could into the file's.
  for (const auto& text : overrides) {
    origins.push_back(apply_override(root, text));
    expand_shorthands(root);
  }
  ReadContext ctx(source_name, yaml_text, std::move(origins));
  static const std::vector<std::string> kSchemaKeys = key_paths(config_fields());
  ctx.set_schema_keys(kSchemaKeys);
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
