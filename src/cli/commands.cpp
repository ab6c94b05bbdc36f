#include "cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "cli/console_writer.hpp"
#include "cli/json_output.hpp"
#include "cli/prediction_csv.hpp"
#include "cli/saved_model.hpp"
#include "cli/signals.hpp"
#include "config/config_loader.hpp"
#include "config/recipe_checks.hpp"
#include "core/epoch_number.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "core/hash.hpp"
#include "core/message_text.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint.hpp"
#include "nn/model.hpp"
#include "parallel/launcher_env.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "parallel/thread_budget.hpp"
#include "train/evaluator.hpp"
#include "train/run_setup.hpp"
#include "train/trainer.hpp"

namespace dl {

int run_train(const CommonOptions& common, const TrainFlags& flags, ProcessGroup& processes) {
  const Config config = load_config_file(common.config_path, common.overrides);
  // Given back when this returns or throws: nothing reads the signals' atomics after the run.
  SignalHandlers handlers;
  if (processes.size() > 1) handlers.name_rank(processes.rank());
  SignalState& signals = handlers.state();
  TrainOptions options;
  options.resume = flags.resume;
  options.overwrite = flags.overwrite;
  options.restart_epoch = flags.restart_epoch;
  options.stop_signal = &signals.stop_signal;
  options.checkpoint_request = &signals.checkpoint_request;
  options.processes = &processes;
  ConsoleWriter& console = ConsoleWriter::start(STDOUT_FILENO, &signals.stop_signal);
  options.log = &console.stream();
  // Under a launcher (mpirun, srun) standard output is the launcher's forwarding, a terminal
  // of its own even when the job's log is a file: the console's auto mode writes lines there,
  // not a bar redrawn with carriage returns in the log.
  options.log_is_terminal = isatty(STDOUT_FILENO) == 1 && !detect_launcher();
  const TrainOutcome outcome = train(config, options);
  // A reader that does not take the last lines in this time has stopped reading (a pager left
  // open, a stalled log shipper); the run's files are complete, so it ends without them, saying
  // so where the lines were missed. Stopped by a signal, the job is inside a scheduler's grace
  // period, and its checkpoint is written: it waits less.
  constexpr std::chrono::seconds kLastLinesWait{10}, kLastLinesWaitStopped{2};
  const std::chrono::seconds wait =
      signals.stop_signal.load() != 0 ? kLastLinesWaitStopped : kLastLinesWait;
  if (!console.finish(wait) && console.failure().empty()) {
    std::cerr << fmt::format(
        "dl-train: warning: standard output's reader did not take the console's last lines in "
        "{} s; they were dropped{}\n",
        wait.count(),
        outcome.run_directory.empty()
            ? std::string()
            : fmt::format(" (the run's files in {} are complete)", outcome.run_directory));
  }
  if (console.failure().empty()) return static_cast<int>(outcome.exit_code);
  const bool stopped = outcome.exit_code == ExitCode::kBrokenPipe;
  // No run directory: the failure stopped the run while it was set up, before anything was
  // written (train's stopped_before_start).
  const std::string what =
      outcome.run_directory.empty() ? std::string("stopped before training; nothing was written")
      : stopped ? fmt::format("stopped with a checkpoint in {}; continue with --resume",
                              outcome.run_directory)
                : fmt::format("the run completed in {}", outcome.run_directory);
  std::cerr << fmt::format("dl-train: standard output failed ({}); {}\n", console.failure(), what);
  // A reader that went away ends the job as a pipeline expects (141, README); an output that
  // failed (a full disk, `ulimit -f`) is an output error, as for every other command.
  const bool output_failed =
      !console.reader_gone() && (outcome.exit_code == ExitCode::kOk || stopped);
  return static_cast<int>(output_failed ? ExitCode::kIoError : outcome.exit_code);
}

namespace {

// "data OK: 60000 training examples (28x28) from …, 10000 test examples from …".
std::string describe_checked_data(const Config& config, const RunData& data) {
  const DataConfig& d = config.data;
  std::string text = fmt::format("data OK: {} training examples ({}) from {}", data.train->size(),
                                 data.train->shape_text(), training_source(d));
  if (data.validation)
    text += fmt::format(", {} validation examples from {}", data.validation->size(),
                        validation_source(d));
  text += fmt::format(", {} test examples from {}", data.test->size(), test_source(d));
  const std::vector<std::string> classes = class_table(*data.train);
  if (!classes.empty())
    text +=
        fmt::format("\nclasses (label, name, training examples):\n{}", fmt::join(classes, "\n"));
  std::vector<std::string> notes = origin_notes(*data.train, training_source(d));
  for (std::string& line : origin_notes(*data.test, test_source(d)))
    notes.push_back(std::move(line));
  if (!notes.empty()) text += "\n" + fmt::format("{}", fmt::join(notes, "\n"));
  return text;
}

}  // namespace

namespace {

// The backend the config would train on here. With --config-only the config is checked for
// another machine (a login node's, without a GPU): a GPU it needs and this machine lacks is no
// refusal then, and the host-memory check is the CPU backend's alone.
BackendKind validated_backend(const Config& config, bool config_only) {
  if (!config_only) return choose_backend(config).kind;
  try {
    return choose_backend(config).kind;
  } catch (const ConfigError&) {
    return BackendKind::kCuda;
  }
}

}  // namespace

int run_validate(const CommonOptions& common, const ValidateFlags& flags) {
  const Config config = load_config_file(common.config_path, common.overrides);
  check_batch_fits_host_memory(config, validated_backend(config, flags.config_only));
  // Read as training reads them, so that a config validate passes does not fail on its data.
  std::string data;
  std::string data_notes;
  if (!flags.config_only) {
    const RunData checked = load_checked_data(config);
    check_schedule_fits_run(config, checked.train->size(), 1);
    data = describe_checked_data(config, checked);
    data_notes = reading_note_lines({checked.train.get(), checked.test.get()});
  }
  for (const std::string& note : unread_key_notes(config))
    std::cerr << "dl-train: note: " << note << "\n";
  std::cerr << data_notes;
  if (flags.json) {
    print_validate_json(common.config_path, config, data);
    return 0;
  }
  std::cout << "# resolved config of " << common.config_path << "\n"
            << dump_config_yaml(config) << "\n"
            << layer_table(config)
            << (flags.config_only ? "data not checked (--config-only)" : data) << "\n"
            << "config OK\n";
  return 0;
}

namespace {

// eval --predictions: "index[,file|,line],label,predicted,p0,...,p<classes-1>" per test example,
// in order: the sample's file or line where the test set names them (an image folder, a CSV
// file), predicted_class after predicted for a model trained on named classes, as predict writes.
void write_predictions(Model& model, const Dataset& test, const std::vector<std::string>& names,
                       const std::string& path) {
  const int classes = model.num_classes();
  const SampleSources& sources = test.origin().sample_sources;
  PredictionCsv csv(classes, names, sources.column, true);
  run_inference(
      model, test,
      [&](std::int64_t first, std::size_t n, const std::int32_t* labels, const float* outputs) {
        for (std::size_t i = 0; i < n; ++i) {
          const auto index = static_cast<std::size_t>(first) + i;
          csv.add(static_cast<std::int64_t>(index), sources.name(index), labels[i],
                  outputs + i * static_cast<std::size_t>(classes));
        }
      });
  write_named_output(path, csv.text());
}

}  // namespace

int run_eval(const CommonOptions& common, const std::string& model_path, bool json,
             const std::string& predictions_path) {
  const SavedModel saved = load_saved_model(model_path, common.config_path, common.overrides);
  const Config& config = saved.config;
  const CheckpointState& state = saved.state;
  refuse_command_output(predictions_path, "--predictions", saved_model_inputs(saved));
  CpuBackend backend;
  Model model(config, backend, config.batchSize);
  model.upload_parameters(state.parameters.data());
  Dataset test = load_test_set(config);
  test.set_pipeline(saved.input);
  std::cerr << reading_note_lines({&test});
  const EvaluationResult result = evaluate(model, test);
  if (!predictions_path.empty())
    write_predictions(model, test, saved.class_names, predictions_path);
  if (json) {
    print_eval_json(model_path, state, test_source(config.data), test.size(), result);
    return 0;
  }
  std::cout << fmt::format("model: {} ({}, {}, iteration {})\n", model_path, state.kind,
                           describe_position(state.epoch, state.round_in_epoch), state.iteration)
            << fmt::format("test set: {} ({} examples), mean loss {:.6f}\n",
                           test_source(config.data), test.size(), figure(result.mean_loss))
            << result.evaluation.stats() << "\n";
  return 0;
}

int run_inspect(const std::string& model_path, bool json) {
  const CheckpointState state = read_checkpoint(model_path);
  if (json) {
    print_inspect_json(model_path, state);
    return 0;
  }
  std::cout << fmt::format("file: {}\nkind: {}\nepoch: {}\nround_in_epoch: {}\niteration: {}\n",
                           model_path, state.kind, state.epoch, state.round_in_epoch,
                           state.iteration)
            << fmt::format("network: {}\nparameters: {}\nparameter_hash: {:016x}\n",
                           message_text::escaped(state.network_signature), state.parameters.size(),
                           fnv1a(state.parameters.data(), state.parameters.size() * sizeof(float)))
            << fmt::format("updater_states: {}\n", state.updater_states.size());
  // Escaped as --json escapes them: a file's strings are whatever its bytes are, and one holding
  // a newline or a terminal's escape sequence printed lines no file holds, or worked the
  // terminal.
  // A value of many lines (the checkpoint's copy of its config) is counted here, whole in --json.
  constexpr std::size_t kMostLines = 1;
  for (const auto& [key, value] : state.metadata) {
    const auto lines = static_cast<std::size_t>(std::count(value.begin(), value.end(), '\n'));
    std::cout << "metadata." << message_text::escaped(key) << ": "
              << (lines > kMostLines ? fmt::format("({} lines; --json holds them)", lines)
                                     : message_text::escaped(value))
              << "\n";
  }
  return 0;
}

int run_info(bool json) {
  const ThreadBudget cpus = plan_threads(ParallelConfig{}, read_cpu_limits(), CpuSharing{});
  const std::string blas = configure_blas_for_this_cpu();
  const BackendAvailability cuda = backend_availability();
  if (json) {
    print_info_json(cpus, blas, cuda);
    return 0;
  }
  std::cout << "dl-train backends:\n"
            << fmt::format("  cpu: available ({} core(s) for this process: {}; {})\n", cpus.cores,
                           cpus.cores_from, blas);
  if (!cuda.cuda_built) {
    std::cout << "  cuda: not built into this binary\n";
    return 0;
  }
  std::cout << fmt::format("  cuda: built; {} device(s) visible\n", cuda.devices.size());
  for (const DeviceInfo& d : cuda.devices) {
    std::cout << fmt::format("    [{}] {}, {:.1f} GiB, compute capability {}.{}\n", d.index, d.name,
                             static_cast<double>(d.memory_bytes) / (1ull << 30), d.compute_major,
                             d.compute_minor);
  }
  for (const std::string& v : cuda.library_versions) std::cout << "    " << v << "\n";
  return 0;
}

}  // namespace dl
