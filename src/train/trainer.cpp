#include "train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "config/config_loader.hpp"
#include "core/stop_request.hpp"
#include "data/data_sources.hpp"
#include "io/checkpoint_directory.hpp"
#include "io/run_files.hpp"
#include "report/build_info.hpp"
#include "train/fit_loop.hpp"
#include "train/listeners/listeners.hpp"
#include "train/rank_agreement.hpp"
#include "train/run_directory.hpp"
#include "train/run_setup.hpp"
#include "train/training_state.hpp"

namespace dl {

namespace {

RunDirectory::Existing existing_run(const TrainOptions& options) {
  return options.resume      ? RunDirectory::Existing::kResume
         : options.overwrite ? RunDirectory::Existing::kOverwrite
                             : RunDirectory::Existing::kRefuse;
}

// The files --overwrite must never delete: the config and the data.
RunDirectory::Protected run_inputs(const Config& config) {
  RunDirectory::Protected inputs{data_input_paths(config.data)};
  inputs.inputs.push_back(config.sourcePath);
  return inputs;
}

// Rank 0 claims the run directory (refusing, resuming or replacing a run, and locking it for
// the whole run) before any other rank looks at it.
RunDirectory open_run_directory(const Config& config, const TrainOptions& options,
                                ProcessGroup& processes) {
  if (processes.is_root()) {
    RunDirectory directory(config.output.directory, existing_run(options), run_inputs(config));
    // A writer killed mid-write leaves "<file>.tmp-<pid>"; only this rank writes here, so only
    // it can tell a dead writer from a live one on another node.
    directory.remove_stale_temporary_files();
    processes.barrier();
    return directory;
  }
  processes.barrier();
  return RunDirectory::view(config.output.directory);
}

// Before anything else is read: the config (after --set) and the binary.
void check_same_config_and_build(const Config& config, ProcessGroup& processes) {
  const BuildInfo& build = build_info();
  check_ranks_agree(processes,
                    {{"resolved config", config_fact_value(config), ExitCode::kConfigError,
                      "start every rank with the same config file and the same --set overrides",
                      config_difference},
                     {"build",
                      fmt::format("dl-train {} ({}, {}, {})", build.version, build.git_commit,
                                  build.build_type, build.compiler),
                      ExitCode::kConfigError, "run the same dl-train binary on every rank"}});
}

using FoundCheckpoint = std::optional<std::pair<std::string, CheckpointState>>;

// --resume: the newest valid checkpoint. None there yet (a run killed before its first one)
// starts from the beginning, saying so; checkpoints that are all damaged are an error naming
// each, so that nothing is overwritten before the user has looked at them.
FoundCheckpoint find_resume_checkpoint(const TrainOptions& options,
                                       const CheckpointDirectory& checkpoints, RunInfo& info) {
  if (!options.resume) return std::nullopt;
  std::vector<std::string> rejected;
  FoundCheckpoint found = checkpoints.load_newest_valid(&rejected);
  if (!found && !rejected.empty()) {
    std::string reasons;
    for (const std::string& why : rejected) reasons += (reasons.empty() ? "" : "; ") + why;
    throw CheckpointError(fmt::format(
        "{}: --resume found no valid checkpoint ({}); move the damaged files away to start "
        "over, or pass --overwrite",
        checkpoints.directory(), reasons));
  }
  for (const std::string& w : rejected) info.resume_log.push_back("warning: " + w);
  if (!found) {
    info.resume_log.push_back(fmt::format(
        "resume: no checkpoint in {} yet; starting from the beginning", checkpoints.directory()));
  }
  return found;
}

// Each rank looks for the newest valid checkpoint itself; a rank that cannot see the run
// directory's files (no shared file system), or saw another newest one, would start elsewhere.
void check_same_start(const FoundCheckpoint& found, const ParallelTrainer& trainer,
                      ProcessGroup& processes) {
  const std::string checkpoint =
      found ? fmt::format("{} (iteration {})", found->first, found->second.iteration)
            : std::string("none: starting from the beginning");
  check_ranks_agree(
      processes,
      {{"checkpoint to resume from", checkpoint, ExitCode::kCheckpointError,
        "put output.directory on a file system every rank sees, and keep only one job writing "
        "it"},
       {"collective", trainer.collective().name(), ExitCode::kConfigError,
        "give every rank the same devices (backend, cuda.devices, CUDA_VISIBLE_DEVICES)"}});
}

// The trainer, the progress and the listeners from the checkpoint found, or the initial
// parameters from the seed.
void resume_or_initialize(const Config& config, FoundCheckpoint found, ParallelTrainer& trainer,
                          TrainingState& state, RunInfo& info) {
  if (!found) {
    trainer.initialize(config.seed);
    return;
  }
  info.resumed_from = found->first;
  info.start = state.restore(found->second, found->first, info.resume_log);
}

// Why the run resumed had already ended (its epochs all trained, or early stopping's verdict in
// its checkpoint), decided by rank 0, which alone has the listeners; empty when it goes on. A
// start that always passes --resume (scripts/cluster/mpijob-launch.sh, a requeued job) meets it
// after the run's end: training on from there rewrote model.dlm (early stopping's stopped model
// stepped once more) and summary.json (test accuracy and score 0, 0 epochs). A run killed after
// its last checkpoint but before its end was written (no model.dlm) has that end still to write
// (the final model, the test set's evaluation, summary.json): it goes on with no epoch left to
// train (`info.max_epochs` lowered on every rank for early stopping's), as the uninterrupted run
// would have written it.
std::string ended_by(RunInfo& info, const Listeners& listeners, ProcessGroup& processes) {
  if (info.resumed_from.empty()) return {};
  enum Decision : int { kGoOn, kEnded, kWriteEnd };
  std::error_code ec;
  const bool end_written =
      std::filesystem::exists(std::filesystem::path(info.run_directory) / run_files::kModel, ec);
  std::string why;
  if (info.start.epoch > info.max_epochs) {
    // Resumed with fewer epochs than it trained: a run cannot go back to an earlier epoch.
    why = fmt::format(
        "{} epoch(s) trained, more than epochs {} asks for; {}): to train further, set epochs "
        "above {} (--set epochs=N)",
        info.start.epoch, info.max_epochs, info.resumed_from, info.start.epoch);
  } else if (info.start.epoch == info.max_epochs) {
    why = fmt::format(
        "all {} epoch(s) trained; {}): to train further, raise epochs (--set "
        "epochs=N)",
        info.max_epochs, info.resumed_from);
  }
  for (const auto& listener : listeners) {
    if (!why.empty()) break;
    why = listener->ended_by();
    if (!why.empty())
      why += fmt::format("; {}): to train again, start a new run (another output.directory)",
                         info.resumed_from);
  }
  int decision = why.empty() ? kGoOn : end_written ? kEnded : kWriteEnd;
  processes.broadcast(&decision, sizeof(decision), 0);
  if (decision == kWriteEnd) info.max_epochs = std::min(info.max_epochs, info.start.epoch);
  if (decision != kEnded) return {};
  return why.empty() ? std::string("ended on rank 0") : why;
}

// The run's console: the caller's stream (the CLI's writer thread), else standard output.
std::ostream& console_of(const TrainOptions& options) {
  return options.log != nullptr ? *options.log : std::cout;
}

// A resumed run that had ended trains nothing and leaves its files as they are.
TrainOutcome leave_ended_run(const RunInfo& info, const std::string& why,
                             const TrainOptions& options, const ProcessGroup& processes) {
  if (processes.is_root()) {
    console_of(options) << fmt::format(
        "resume: the run in {} has ended ({}; nothing is trained, and its files are left as "
        "they are\n",
        info.run_directory, why);
  }
  TrainOutcome outcome;
  outcome.epochs_completed = info.start.epoch;
  outcome.iterations = info.start.iteration;
  outcome.run_directory = info.run_directory;
  return outcome;
}

// A stop signal that came while the run was set up (the data read, the network built): rank 0's,
// which every rank follows. Nothing has been written yet, so the run ends before it claims its
// directory, instead of claiming it to train one step and write a first checkpoint.
int stop_signal_before_start(const TrainOptions& options, ProcessGroup& processes) {
  int signal = options.stop_signal != nullptr ? options.stop_signal->load() : 0;
  processes.broadcast(&signal, sizeof(signal), 0);
  return signal;
}

// `while_doing` says what the run was doing: "while setting up", "while reading the data".
TrainOutcome stopped_before_start(int signal, const char* while_doing, const Config& config,
                                  const TrainOptions& options, const ProcessGroup& processes) {
  if (processes.is_root()) {
    console_of(options) << fmt::format(
        "stopped by signal {} {}, before training: nothing was written to {}; start the run "
        "again\n",
        signal, while_doing, config.output.directory);
  }
  TrainOutcome outcome;
  outcome.exit_code = exit_code_for_signal(signal);
  return outcome;
}

}  // namespace

TrainOutcome train(const Config& config, const TrainOptions& options) {
  std::unique_ptr<ProcessGroup> own_processes =
      options.processes == nullptr ? make_single_process_group() : nullptr;
  ProcessGroup& processes = options.processes != nullptr ? *options.processes : *own_processes;
  processes.set_timeout(config.parallel.timeout);
  // A start refused for its run directory fails before the data are read; a start that fails
  // while setting up (data, shapes, backend) has not claimed the directory yet.
  if (processes.is_root())
    RunDirectory::check(config.output.directory, existing_run(options), run_inputs(config));
  check_same_config_and_build(config, processes);
  std::optional<RunSetup> set_up;
  try {
    const StopRequestScope watch(options.stop_signal);  // a long data read ends early
    set_up = set_up_run(config, processes);
  } catch (const StopRequested& stop) {
    return stopped_before_start(stop.signal(), "while reading the data", config, options,
                                processes);
  }
  RunSetup& setup = *set_up;
  if (const int signal = stop_signal_before_start(options, processes); signal != 0)
    return stopped_before_start(signal, "while setting up", config, options, processes);
  const RunDirectory run = open_run_directory(config, options, processes);
  setup.info.run_directory = run.path();

  CheckpointDirectory checkpoints(run.checkpoints(), config.output.keepLast);
  FoundCheckpoint found = find_resume_checkpoint(options, checkpoints, setup.info);
  check_same_start(found, *setup.trainer, processes);
  RunProgress progress;
  Listeners listeners;
  TrainingState state(config, *setup.trainer, progress, listeners, checkpoints);
  state.allow_changed_data_order(options.restart_epoch);
  const InputPipeline& pipeline = setup.train->pipeline();
  if (pipeline.normalizes())
    state.add_run_metadata(kInputNormalizationKey, format_normalization(pipeline));
  const std::vector<std::string>& class_names = setup.train->origin().class_names;
  if (!class_names.empty())
    state.add_run_metadata(kClassNamesKey, fmt::format("{}", fmt::join(class_names, "\n")));
  if (processes.is_root()) {
    std::ostream& console = console_of(options);
    const bool terminal =
        options.log != nullptr ? options.log_is_terminal : isatty(STDOUT_FILENO) == 1;
    listeners = make_listeners(ListenerContext{config, run, state, console, terminal});
  }
  resume_or_initialize(config, std::move(found), *setup.trainer, state, setup.info);
  if (const std::string why = ended_by(setup.info, listeners, processes); !why.empty())
    return leave_ended_run(setup.info, why, options, processes);

  FitLoop loop(config, options, processes, *setup.trainer, *setup.test, setup.validation.get(),
               progress, listeners);
  return loop.run(setup.info);
}

}  // namespace dl
