// A trained model file with the config it was trained with, for the commands that use a model
// outside training (eval, predict, export).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/input_pipeline.hpp"
#include "io/checkpoint.hpp"

namespace dl {

struct SavedModel {
  std::string model_path;
  std::string config_path;
  Config config;
  CheckpointState state;
  // The normalization the model was trained with (from its metadata); nothing else of the
  // training pipeline applies outside training.
  InputPipeline input;
  // The class names it was trained with, by label (image folders, CSV text labels); empty:
  // classes are numbers.
  std::vector<std::string> class_names;
};

// Reads `model_path` (a model .dlm or a checkpoint) and its config: `config_path`, or when empty
// the run directory's config.resolved.yaml beside the model (or one level up, for checkpoints/).
// Throws CheckpointError when the file holds a different network than the config describes.
SavedModel load_saved_model(const std::string& model_path, const std::string& config_path,
                            const std::vector<std::string>& overrides);

}  // namespace dl
