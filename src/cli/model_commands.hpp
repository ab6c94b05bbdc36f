// The commands that take a trained model out of the tool:
//   dl-train predict --model M --input FILE [--input-format idx|cifar10|cifar100] [--output CSV]
//   dl-train export --format onnx --model M --output FILE.onnx
// Both read the model's config from its run directory unless --config names one. Registered on
// the CLI by add_model_commands, so main() needs two lines for them.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dl {

struct PredictOptions {
  std::string model_path, config_path, input_path, input_format, output_path;
  std::vector<std::string> overrides;  // --set: the reading keys (data.onBadFile, say)
};

struct ExportOptions {
  std::string model_path, config_path, format, output_path;
};

struct ModelCommands {
  CLI::App* predict = nullptr;
  CLI::App* export_model = nullptr;
  PredictOptions predict_options;
  ExportOptions export_options;
  bool chosen() const { return *predict || *export_model; }
};

void add_model_commands(CLI::App& app, ModelCommands& commands);
// Runs the chosen one; returns the exit code.
int run_model_command(const ModelCommands& commands);

// CSV on `output_path` (stdout when empty): "index,predicted,p0,...,p<classes-1>", one row per
// image, the probabilities as the output layer gives them.
int run_predict(const PredictOptions& options);
int run_export(const ExportOptions& options);

}  // namespace dl
