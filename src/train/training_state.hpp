// The state of a run that checkpoints and model files hold: the trainer's (parameters, updater
// states, loss scales), the run's progress (samples and seconds across resumes), and what each
// listener adds (TrainingListener::on_checkpoint_save). Saving and resuming go through here.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_directory.hpp"
#include "parallel/parallel_trainer.hpp"
#include "train/resume_keys.hpp"
#include "train/training_listener.hpp"

namespace dl {

using Listeners = std::vector<std::unique_ptr<TrainingListener>>;

// How far the run has come over all the processes that trained it (restored on resume).
class RunProgress {
 public:
  using Clock = std::chrono::steady_clock;

  std::int64_t iteration = 0;        // global rounds done
  std::int64_t samples_trained = 0;  // counted at sync points, so a resumed run's total matches
  double seconds_before = 0.0;       // wall time of the runs this one resumes
  double round_seconds = 0.0;        // this process's time in rounds: no evaluation, no saving
  // The current epoch's training loss, correct predictions and samples so far (rank 0, added up
  // at sync points; kept in checkpoints, so a resumed epoch reports the whole epoch).
  double epoch_loss = 0.0, epoch_correct = 0.0;
  std::int64_t epoch_samples = 0;
  // The last score reported (scores.csv; worker 0's when each worker reports its own). Kept in
  // checkpoints: a run resumed only to write its end (killed after its last checkpoint) reports
  // no score itself, and its summary.json's final_score must be the uninterrupted run's.
  std::optional<double> last_score;

  void start() { start_ = Clock::now(); }                   // training starts in this process
  double process_seconds() const { return since(start_); }  // since start()
  double run_seconds() const { return seconds_before + process_seconds(); }
  // Training time over the whole run: rounds only.
  double train_seconds() const { return seconds_before + round_seconds; }

  static double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

 private:
  Clock::time_point start_ = Clock::now();
};

class TrainingState {
 public:
  // All references are kept; `listeners` may be filled after construction.
  TrainingState(const Config& config, ParallelTrainer& trainer, RunProgress& progress,
                const Listeners& listeners, CheckpointDirectory& checkpoints);

  // The state at `next` (the position a resumed run starts from). A checkpoint (kind
  // kCheckpointKind) also holds the updater states, loss scales and the listeners' state.
  CheckpointState capture(const std::string& kind, const RunPosition& next);
  // Writes a checkpoint into checkpoints/ (keeping the newest output.keepLast); returns its path.
  std::string save_checkpoint(const RunPosition& next);
  // Writes a model file (kModelKind) at `path`.
  void save_model(const std::string& path, const RunPosition& next);

  // Restores the trainer and the progress from `state`, read from `path`, then each listener's
  // part; returns where training resumes. Notes for the log are appended to `log`. Throws
  // CheckpointError when the checkpoint does not fit this network and updater.
  RunPosition restore(const CheckpointState& state, const std::string& path,
                      std::vector<std::string>& log);

  // --restart-epoch: a checkpoint saved under another batch size, data, seed, network or worker
  // count is resumed from its parameters at the start of its epoch instead of being refused.
  void allow_changed_data_order(bool allow) { allow_changed_data_order_ = allow; }
  // Metadata every model and checkpoint file of the run carries (the input normalization, which
  // eval, predict and export apply).
  void add_run_metadata(const std::string& key, const std::string& value) {
    run_metadata_[key] = value;
  }

 private:
  void check_data_order(const CheckpointState& state, const std::string& path,
                        RunPosition& position, std::vector<std::string>& log);
  // The keys that differ from the checkpoint's beyond its job's layout (ranks and workers, which a
  // resume re-shards).
  std::vector<std::string> changed_beyond_layout(const CheckpointState& state,
                                                 const JobLayout& saved) const;
  void continue_in_epoch(const CheckpointState& state, const std::string& path,
                         const JobLayout& saved, RunPosition& position,
                         std::vector<std::string>& log);
  void restore_updater_states(const CheckpointState& state, const std::string& path);
  void restore_loss_scalers(const CheckpointState& state, const std::string& path);
  void note_changed_algorithms(const CheckpointState& state, std::vector<std::string>& log) const;
  std::string config_change_note(const CheckpointState& state) const;

  const Config& config_;
  ParallelTrainer& trainer_;
  RunProgress& progress_;
  const Listeners& listeners_;
  CheckpointDirectory& checkpoints_;
  bool allow_changed_data_order_ = false;
  std::map<std::string, std::string> run_metadata_;
};

}  // namespace dl
