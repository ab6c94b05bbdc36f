#include "cli/model_commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "cli/prediction_csv.hpp"
#include "cli/saved_model.hpp"
#include "core/class_names.hpp"
#include "core/error.hpp"
#include "data/data_format.hpp"
#include "data/data_sources.hpp"
#include "export/onnx_export.hpp"
#include "io/atomic_file.hpp"
#include "nn/model.hpp"
#include "train/evaluator.hpp"

namespace dl {

namespace {

constexpr const char* kOnnxFormat = "onnx";
constexpr const char* kModelHelp = "model.dlm, best_model.dlm or a checkpoint file";
constexpr const char* kConfigHelp =
    "the config the model was trained with (default: config.resolved.yaml of its run directory)";

const DataFormatKind& input_format(const PredictOptions& options, const Config& config) {
  if (options.input_format.empty()) return data_format(config.data.format);
  const DataFormatKind* format = find_data_format(options.input_format);
  if (format == nullptr)
    throw ConfigError(fmt::format("--input-format {} is not a data format; write one of {}",
                                  options.input_format, fmt::join(data_format_names(), ", ")));
  return *format;
}

// --input read as `format`. Read as the model's data.format because --input-format was not
// given, a PNG, a CSV file or a CIFAR batch given for an IDX model was refused as a damaged IDX
// file ("wrong IDX data type byte"), never saying that another format can be asked for.
Dataset load_input(const PredictOptions& options, const DataFormatKind& format,
                   const SavedModel& saved) {
  try {
    return load_images_file(options.input_path, format.format, saved.config, saved.class_names);
  } catch (const DataError& e) {
    std::error_code ec;
    // A folder read as the image folder it is: its errors are about its contents, not its kind.
    const bool folder_as_folder = format.format == DataFormat::kImageFolder &&
                                  std::filesystem::is_directory(options.input_path, ec);
    if (!options.input_format.empty() || !std::filesystem::exists(options.input_path, ec) ||
        folder_as_folder)
      throw;
    throw DataError(fmt::format(
        "{} (read as {}, the model's data.format; for another kind of file pass --input-format: "
        "{})",
        e.what(), format.name, fmt::join(data_format_names(), ", ")));
  }
}

// "idx: an IDX images file ...; cifar10: ..." for --input's help.
std::string input_help() {
  std::string help = "the samples to predict, by --input-format:";
  for (const DataFormatKind& format : data_formats())
    help += fmt::format(" {}: {};", format.name, format.predict.help);
  help.pop_back();
  return help;
}

// With data.onBadFile: skip the inputs left out have no row and the rows after them are numbered
// without them: the rows could not be matched to their inputs, so each one left out is named, as
// a run's log names them.
void report_skipped(const DataOrigin& origin, const std::string& input) {
  for (const std::string& line :
       skipped_notes(origin, input, "; they have no row, and index counts the inputs read"))
    std::cerr << "predict: " << line << "\n";
}

}  // namespace

void add_model_commands(CLI::App& app, ModelCommands& commands) {
  PredictOptions& p = commands.predict_options;
  commands.predict =
      app.add_subcommand("predict", "write a model's class probabilities for images (CSV)");
  commands.predict->add_option("-m,--model", p.model_path, kModelHelp)->required();
  commands.predict->add_option("-i,--input", p.input_path, input_help())->required();
  commands.predict->add_option(
      "--input-format", p.input_format,
      fmt::format("{} (default: the model's data.format)", fmt::join(data_format_names(), ", ")));
  commands.predict->add_option("-o,--output", p.output_path, "the CSV file (default: stdout)");
  commands.predict->add_option("-c,--config", p.config_path, kConfigHelp);
  // A bad input file's message advises data.onBadFile: skip, which predict must take as eval does.
  commands.predict
      ->add_option("--set", p.overrides,
                   "override a value of the model's config: key.path=value (repeatable), e.g. "
                   "--set data.onBadFile=skip")
      ->take_all();

  ExportOptions& e = commands.export_options;
  commands.export_model =
      app.add_subcommand("export", "write a model in a format other tools read (ONNX)");
  commands.export_model->add_option("-f,--format", e.format, "onnx")
      ->required()
      ->check(CLI::IsMember({kOnnxFormat}));
  commands.export_model->add_option("-m,--model", e.model_path, kModelHelp)->required();
  commands.export_model->add_option("-o,--output", e.output_path, "the file to write")->required();
  commands.export_model->add_option("-c,--config", e.config_path, kConfigHelp);
}

int run_model_command(const ModelCommands& commands) {
  if (*commands.predict) return run_predict(commands.predict_options);
  return run_export(commands.export_options);
}

int run_predict(const PredictOptions& options) {
  const SavedModel saved =
      load_saved_model(options.model_path, options.config_path, options.overrides);
  const Config& config = saved.config;
  const DataFormatKind& format = input_format(options, config);
  refuse_command_output(options.output_path, "--output",
                        saved_model_inputs(saved, {{"--input", options.input_path}}));
  Dataset images = load_input(options, format, saved);
  images.set_pipeline(saved.input);
  // A folder of class folders is labelled by them: they must be the model's classes.
  const std::vector<std::string>& folder_classes = images.origin().class_names;
  // A model trained on numbered classes (IDX, CIFAR) has no names to match folders against.
  if (!folder_classes.empty() && saved.class_names.empty())
    throw DataError(fmt::format(
        "{}: its images are in class folders ({}), but the model was trained on numbered "
        "classes (data.format: {}), which no folder names; give a folder of the images alone",
        options.input_path, fmt::join(folder_classes, ", "), data_format(config.data.format).name));
  if (!folder_classes.empty() && folder_classes != saved.class_names)
    throw DataError(fmt::format(
        "{}: its class folders ({}) are not the classes the model was "
        "trained on ({}); give a folder with the training set's classes",
        options.input_path, fmt::join(folder_classes, ", "), fmt::join(saved.class_names, ", ")));
  CpuBackend backend;
  Model model(config, backend, config.batchSize);
  if (images.sample_floats() != model.input_size()) {
    throw DataError(fmt::format(
        "{}: images of {} ({} values), but the model takes {} values per image; give images of "
        "the kind it was trained on (--input-format says how to read the file)",
        options.input_path, images.shape_text(), images.sample_floats(), model.input_size()));
  }
  model.upload_parameters(saved.state.parameters.data());
  // Where the input names its samples (an image's file, a CSV row's line), each row names its
  // sample's after its index; with class names, its class too.
  const SampleSources& sources = images.origin().sample_sources;
  const int classes = model.num_classes();
  PredictionCsv csv(classes, saved.class_names, sources.column, false);
  std::int64_t correct = 0;
  run_inference(
      model, images,
      [&](std::int64_t first, std::size_t n, const std::int32_t* labels, const float* outputs) {
        for (std::size_t i = 0; i < n; ++i) {
          const std::int64_t index = first + static_cast<std::int64_t>(i);
          const int predicted = csv.add(index, sources.name(static_cast<std::size_t>(index)),
                                        labels[i], outputs + i * static_cast<std::size_t>(classes));
          correct += predicted == labels[i] ? 1 : 0;
        }
      });
  if (options.output_path.empty()) {
    std::cout << csv.text();
  } else {
    write_named_output(options.output_path, csv.text());
  }
  const bool labelled = format.predict.labelled || !folder_classes.empty();
  std::cerr << fmt::format(
      "predict: {} {} from {} ({}){}\n", images.size(),
      images.has_features() ? "samples" : "images", options.input_path, images.shape_text(),
      labelled ? fmt::format(", accuracy {:.4f} against the input's labels",
                             images.size() > 0
                                 ? static_cast<double>(correct) / static_cast<double>(images.size())
                                 : 0.0)
               : std::string());
  report_skipped(images.origin(), options.input_path);
  std::cerr << reading_note_lines({&images});
  return 0;
}

int run_export(const ExportOptions& options) {
  const SavedModel saved = load_saved_model(options.model_path, options.config_path, {});
  refuse_command_output(options.output_path, "--output", saved_model_inputs(saved));
  const std::string bytes = onnx_model_bytes(saved.config, saved.state.parameters, saved.input.mean,
                                             saved.input.std, saved.class_names);
  write_named_output(options.output_path, bytes);
  std::cout << fmt::format("export: {} (ONNX, {} bytes) from {} ({} parameters)\n",
                           options.output_path, bytes.size(), options.model_path,
                           saved.state.parameters.size());
  return 0;
}

}  // namespace dl
