#include "cli/saved_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "core/message_text.hpp"
#include "data/data_sources.hpp"
#include "io/run_files.hpp"
#include "nn/model.hpp"
#include "train/resume_keys.hpp"
#include "train/run_directory.hpp"

namespace dl {

namespace fs = std::filesystem;

namespace {

// The config a saved model was trained with: the run directory's resolved config, which sits
// beside model.dlm and one level above checkpoints/.
std::string config_beside(const std::string& model_path) {
  const fs::path dir = fs::path(model_path).parent_path();
  for (const fs::path& candidate :
       {dir / run_files::kResolvedConfig, dir.parent_path() / run_files::kResolvedConfig}) {
    if (fs::exists(candidate)) return candidate.string();
  }
  throw ConfigError(model_path + ": no " + run_files::kResolvedConfig +
                    " found beside it or in its parent directory; pass --config");
}

// The model's input normalization, which the config's data.normalize must agree with: either
// way round, the inputs would differ from the ones it was trained on.
void read_input_normalization(SavedModel& saved) {
  const auto it = saved.state.metadata.find(kInputNormalizationKey);
  const bool recorded = it != saved.state.metadata.end();
  if (saved.config.data.normalize && !recorded)
    throw CheckpointError(fmt::format(
        "{}: {} sets data.normalize but the model file holds no input normalization; pass the "
        "config the model was trained with",
        saved.model_path, saved.config_path));
  if (!saved.config.data.normalize && recorded)
    throw CheckpointError(fmt::format(
        "{}: the model was trained on normalized inputs but {} sets data.normalize: false, so "
        "it would be given raw pixels; pass the config the model was trained with, or set "
        "data.normalize: true (the model's own statistics are used)",
        saved.model_path, saved.config_path));
  if (!recorded) return;
  try {
    parse_normalization(it->second, saved.input);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("{}: damaged {} metadata: {}", saved.model_path,
                                      kInputNormalizationKey, e.what()));
  }
}

}  // namespace

SavedModel load_saved_model(const std::string& model_path, const std::string& config_path,
                            const std::vector<std::string>& overrides) {
  SavedModel saved;
  saved.model_path = model_path;
  // The model first: a wrong model path (missing, a FIFO, a directory) is what to report, not the
  // config that is then also missing beside it.
  saved.state = read_checkpoint(model_path);
  saved.config_path = config_path.empty() ? config_beside(model_path) : config_path;
  saved.config = load_config_file(saved.config_path, overrides);
  const auto layers = build_layers(plan_layers(saved.config));
  const std::string signature = network_signature(layers);
  std::size_t parameters = 0;
  for (const auto& layer : layers) parameters += layer->parameter_count();
  if (saved.state.network_signature != signature || saved.state.parameters.size() != parameters) {
    throw CheckpointError(fmt::format(
        "{}: saved from a different network than {} describes ({}); pass the config the model "
        "was trained with",
        model_path, saved.config_path,
        signature_difference(saved.state.network_signature, signature)));
  }
  // Same parameter counts can still wire or activate them otherwise (a concat's order, an
  // activation): the file's recorded layers decide (files written before they were recorded
  // have none, and pass as before).
  const std::vector<std::string> changed = changed_network_keys(saved.config, saved.state);
  if (!changed.empty()) {
    throw CheckpointError(fmt::format(
        "{}: saved from a different network than {} describes ({}); pass the config the model "
        "was trained with",
        model_path, saved.config_path, fmt::join(changed, "; ")));
  }
  // A model of NaN or Inf weights predicts NaN for everything: predict wrote "class 0" beside NaN
  // probabilities, exit 0. Training saves none (a diverged run stops first), so it is damage.
  const auto not_finite =
      std::count_if(saved.state.parameters.begin(), saved.state.parameters.end(),
                    [](float value) { return !std::isfinite(value); });
  if (not_finite > 0) {
    throw CheckpointError(fmt::format(
        "{}: {} of its {} parameters are not finite (NaN or Inf), so everything it computes "
        "would be; the file is damaged or not dl-train's: use another checkpoint of the run",
        model_path, not_finite, saved.state.parameters.size()));
  }
  const auto names = saved.state.metadata.find(kClassNamesKey);
  if (names != saved.state.metadata.end()) {
    std::istringstream lines(names->second);
    for (std::string name; std::getline(lines, name);) saved.class_names.push_back(name);
  }
  read_input_normalization(saved);
  return saved;
}

std::vector<NamedInput> saved_model_inputs(const SavedModel& saved, std::vector<NamedInput> extra) {
  extra.push_back({"--model", saved.model_path});
  extra.push_back({"--config", saved.config_path});
  for (std::string& path : data_input_paths(saved.config.data))
    extra.push_back({"the config's data file", std::move(path)});
  return extra;
}

void refuse_command_output(const std::string& output, const std::string& option,
                           const std::vector<NamedInput>& inputs, const std::string& own_name) {
  refuse_output_over_inputs(output, option, inputs);
  if (output.empty()) return;
  const std::filesystem::path path(output);
  const auto parent_of = [](const std::filesystem::path& p) {
    return p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  };
  const std::filesystem::path folder = parent_of(path);
  const std::string name = path.filename().string();
  const auto marked = [](const std::filesystem::path& dir) {
    std::error_code ec;
    return std::filesystem::exists(dir / RunDirectory::kMarkerName, ec);
  };
  // A run's own file: a name training writes, in a folder dl-train made a run directory.
  std::filesystem::path run;
  if (is_run_output_name(name) && name != own_name && marked(folder)) run = folder;
  if (folder.filename() == RunDirectory::kCheckpointsName && is_checkpoint_file_name(name) &&
      marked(parent_of(folder)))
    run = parent_of(folder);
  if (run.empty()) return;
  throw IoError(fmt::format(
      "{}: {} names the run's own {} in the run directory {}, so writing it would destroy that "
      "run's output; nothing was written: give {} another path",
      quoted_path(output), option, quoted_path(name), quoted_path(run.string()), option));
}

}  // namespace dl
