#include "cli/saved_model.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "nn/model.hpp"

namespace dl {

namespace fs = std::filesystem;

namespace {

constexpr const char* kResolvedConfigName = "config.resolved.yaml";

// The config a saved model was trained with: the run directory's resolved config, which sits
// beside model.dlm and one level above checkpoints/.
std::string config_beside(const std::string& model_path) {
  const fs::path dir = fs::path(model_path).parent_path();
  for (const fs::path& candidate :
       {dir / kResolvedConfigName, dir.parent_path() / kResolvedConfigName}) {
    if (fs::exists(candidate)) return candidate.string();
  }
  throw ConfigError(model_path + ": no " + kResolvedConfigName +
                    " found beside it or in its parent directory; pass --config");
}

}  // namespace

SavedModel load_saved_model(const std::string& model_path, const std::string& config_path,
                            const std::vector<std::string>& overrides) {
  SavedModel saved;
  saved.model_path = model_path;
  saved.config_path = config_path.empty() ? config_beside(model_path) : config_path;
  saved.config = load_config_file(saved.config_path, overrides);
  saved.state = read_checkpoint(model_path);
  const auto layers = build_layers(plan_layers(saved.config));
  const std::string signature = network_signature(layers);
  std::size_t parameters = 0;
  for (const auto& layer : layers) parameters += layer->parameter_count();
  if (saved.state.network_signature != signature || saved.state.parameters.size() != parameters) {
    throw CheckpointError(fmt::format(
        "{}: saved from a different network ({}) than {} describes ({}); pass the config the "
        "model was trained with",
        model_path, saved.state.network_signature, saved.config_path, signature));
  }
  return saved;
}

}  // namespace dl
