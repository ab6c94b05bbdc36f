#include "train/trainer.hpp"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "config/config_loader.hpp"
#include "io/checkpoint_directory.hpp"
#include "train/fit_loop.hpp"
#include "train/listeners/listeners.hpp"
#include "train/run_directory.hpp"
#include "train/run_setup.hpp"
#include "train/training_state.hpp"

namespace dl {

namespace {

// Rank 0 prepares the run directory (refusing, resuming or replacing a run) before any other
// rank looks at it.
RunDirectory open_run_directory(const Config& config, const TrainOptions& options,
                                ProcessGroup& processes) {
  const RunDirectory::Existing existing = options.resume      ? RunDirectory::Existing::kResume
                                          : options.overwrite ? RunDirectory::Existing::kOverwrite
                                                              : RunDirectory::Existing::kRefuse;
  if (processes.is_root()) {
    RunDirectory directory(config.output.directory, existing);
    // A writer killed mid-write leaves "<file>.tmp-<pid>"; only this rank writes here, so only
    // it can tell a dead writer from a live one on another node.
    directory.remove_stale_temporary_files();
    processes.barrier();
    return directory;
  }
  processes.barrier();
  return RunDirectory(config.output.directory, RunDirectory::Existing::kResume);
}

void check_same_config_on_every_rank(const Config& config, ProcessGroup& processes) {
  const std::vector<std::uint64_t> hashes = processes.all_gather(config_hash(config));
  for (std::size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] != hashes[0]) {
      throw ConfigError(fmt::format(
          "rank {}: its resolved config differs from rank 0's (hash {:016x}, rank 0 {:016x}); "
          "start every rank with the same config file and the same --set overrides",
          r, hashes[r], hashes[0]));
    }
  }
}

// --resume: the trainer, the progress and the listeners from the newest valid checkpoint, or
// (none, or no --resume) the initial parameters from the seed.
void resume_or_initialize(const Config& config, const TrainOptions& options,
                          const CheckpointDirectory& checkpoints, ParallelTrainer& trainer,
                          TrainingState& state, RunInfo& info) {
  std::optional<std::pair<std::string, CheckpointState>> found;
  if (options.resume) {
    std::vector<std::string> warnings;
    found = checkpoints.load_newest_valid(&warnings);
    for (const std::string& w : warnings) info.resume_log.push_back("warning: " + w);
    if (!found) {
      info.resume_log.push_back(fmt::format("resume: no valid checkpoint in {}; starting fresh",
                                            checkpoints.directory()));
    }
  }
  if (!found) {
    trainer.initialize(config.seed);
    return;
  }
  info.resumed_from = found->first;
  info.start = state.restore(found->second, found->first, info.resume_log);
}

}  // namespace

TrainOutcome train(const Config& config, const TrainOptions& options) {
  std::unique_ptr<ProcessGroup> own_processes =
      options.processes == nullptr ? make_single_process_group() : nullptr;
  ProcessGroup& processes = options.processes != nullptr ? *options.processes : *own_processes;
  const RunDirectory run = open_run_directory(config, options, processes);
  check_same_config_on_every_rank(config, processes);
  RunSetup setup = set_up_run(config, processes);
  setup.info.run_directory = run.path();

  CheckpointDirectory checkpoints(run.checkpoints(), config.output.keepLast);
  RunProgress progress;
  Listeners listeners;
  TrainingState state(config, *setup.trainer, progress, listeners, checkpoints);
  if (processes.is_root()) {
    std::ostream& console = options.log != nullptr ? *options.log : std::cout;
    const bool terminal = options.log == nullptr && isatty(STDOUT_FILENO) == 1;
    listeners = make_listeners(ListenerContext{config, run, state, console, terminal});
  }
  resume_or_initialize(config, options, checkpoints, *setup.trainer, state, setup.info);

  FitLoop loop(config, options, processes, *setup.trainer, *setup.test, progress, listeners);
  return loop.run(setup.info);
}

}  // namespace dl
