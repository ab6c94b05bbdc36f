// A trained model file with the config it was trained with, for the commands that use a model
// outside training (eval, predict, export).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/input_pipeline.hpp"
#include "io/atomic_file.hpp"
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

// What a command with `saved` reads: the model, its config and the files its data keys name
// (eval's test set), for refuse_output_over_inputs; `extra` adds the command's own inputs.
std::vector<NamedInput> saved_model_inputs(const SavedModel& saved,
                                           std::vector<NamedInput> extra = {});

// Refuses, with an IoError before anything is written, an output path given as `option` that
// would destroy what the command reads (`inputs`: refuse_output_over_inputs) or a run's own file:
// a name training writes (scores.csv, summary.json, a checkpoint) in a run directory (the folder
// holds dl-train's marker). `predict -o runs/a/scores.csv` replaced that run's log, and
// `report -o runs/a/model.dlm` its trained model. `own_name` is the one run file the command
// itself writes (report's report.html), allowed.
void refuse_command_output(const std::string& output, const std::string& option,
                           const std::vector<NamedInput>& inputs, const std::string& own_name = {});

}  // namespace dl
