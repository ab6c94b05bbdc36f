// What follows a run: the interface of the console, every file of the run directory, early
// stopping and checkpoints (each one listener in src/train/listeners/), and of what comes next
// (a progress bar, an HTML report, TensorBoard). The fit loop (fit_loop.hpp) only trains,
// evaluates and calls them.
//
// Order: listeners are called in the order of make_listeners (listeners/listeners.cpp), the same
// order for every event. An event is passed by reference and carries what the listeners before
// did with it (a stop asked for, checkpoints written, the early-stopping result), so a later
// listener (the console, last) can report it.
//
// Only rank 0 of a job (MPI) has listeners: it alone writes outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "io/checkpoint.hpp"
#include "parallel/parallel_trainer.hpp"
#include "train/early_stopping.hpp"
#include "train/evaluator.hpp"
#include "train/trainer.hpp"

namespace dl {

// Where a run starts: epoch, round in it and global iteration (all 0 for a fresh run).
struct RunPosition {
  int epoch = 0;
  std::int64_t round = 0;
  std::int64_t iteration = 0;
};

// on_start: the run as set up, before its first round.
struct RunInfo {
  const Config* config = nullptr;
  std::string run_directory;
  std::string layer_table;    // as `dl-train validate` prints it
  int processes = 1;          // of the job (MPI ranks)
  std::string process_group;  // their kind, e.g. "mpi"
  int global_workers = 1;     // workers of the whole job
  std::int64_t train_examples = 0, test_examples = 0;
  std::int64_t validation_examples = 0;  // 0: no validation set
  std::string validation_source;         // where the validation set comes from
  std::string input_pipeline;            // what the loader does to samples; empty: nothing
  std::string sample_shape;  // of one example, as the data set describes it (e.g. "28x28")
  // What reading the data found besides samples (data_sources.hpp's origin_notes): image sizes,
  // files skipped under data.onBadFile: skip.
  std::vector<std::string> data_notes;
  // The files data.onBadFile: skip left out of the training and test sets ("path: why").
  std::vector<std::string> skipped_files;
  std::int64_t rounds_per_epoch = 0;
  int max_epochs = 0;  // the epoch limit (earlyStopping.maxEpochs or epochs)
  std::size_t parameters = 0;
  // The set-up as it describes itself, one line each (console and report print them).
  std::string blas, threads, backend, placement, collective, optimizer, data_placement;
  LossScalingMode loss_scaling = LossScalingMode::kNone;
  double initial_loss_scale = 1.0;
  RunPosition start;                    // where training resumes (zeros: a fresh run)
  std::string resumed_from;             // the checkpoint resumed, empty for a fresh run
  std::vector<std::string> resume_log;  // what resuming said (warnings, notes), one line each
};

// One row of scores.csv.
struct ScoreRow {
  int worker = -1;  // -1: the sample-weighted score of all workers ("all")
  double score = 0.0;
};

// Why a checkpoint was written.
enum class SaveReason {
  kPeriodic,    // output.checkpointEveryIterations
  kRequested,   // SIGUSR1
  kStopSignal,  // SIGINT/SIGTERM: saved, then the run stops
  kStopped,     // the run stops in the middle of an epoch (early stopping)
  kEpochEnd,
};

struct SavedCheckpoint {
  std::string path;
  SaveReason reason = SaveReason::kPeriodic;
};

// on_sync_point: a round after which every replica can be reported and saved.
struct SyncEvent {
  explicit SyncEvent(const SyncPoint& sync_point) : point(sync_point) {}

  const SyncPoint& point;            // epoch, round, iteration, per-worker losses and samples, rate
  std::int64_t samples_trained = 0;  // over the whole run, across resumes
  double run_seconds = 0.0;          // wall time since training started, across resumes
  double process_seconds = 0.0;      // wall time since training started in this process

  // A score report (output.scoreEveryIterations, and every epoch's end): the rows of scores.csv,
  // the score the console shows, and the images per second since the previous report.
  bool report = false;
  std::vector<ScoreRow> scores;
  double score = 0.0;
  double images_per_second = 0.0;

  // Requests from outside (the CLI's signal handlers), read once per sync point.
  int stop_signal = 0;                // a signal number asking to stop with a checkpoint
  int stop_signal_rank = 0;           // the rank (MPI) that received it
  bool checkpoint_requested = false;  // SIGUSR1

  // Set by listeners.
  bool stop = false;  // stop after this round (early stopping, a stop signal)
  std::vector<SavedCheckpoint> saved;

  // The sample-weighted mean loss over all workers plus the L2 term (computed on first use).
  double aggregated_score() const;
  std::function<double()> compute_aggregated_score;
  // The epoch's training loss so far, as its epoch line will give it (Keras's bar): the data loss
  // over every round of the epoch trained so far plus the L2 term at the current parameters.
  // Computed on call (the bar asks at most ten times a second); at the epoch's last round it is
  // the epoch line's train loss.
  std::function<double()> compute_epoch_train_loss;

 private:
  mutable std::optional<double> aggregated_;
};

// on_epoch_end: an epoch completed and evaluated.
struct EpochEnd {
  int epoch = 0;
  std::int64_t iteration = 0;
  double epoch_seconds = 0.0;  // its rounds only
  std::int64_t epoch_samples = 0;
  double images_per_second = 0.0;
  // The epoch's training loss (the output layer's loss per sample over its rounds as they were
  // trained, plus the L2 term at the epoch's last parameters) and accuracy (Keras's `loss` and
  // `accuracy`).
  double train_loss = 0.0, train_accuracy = 0.0;
  // Each epoch evaluates the validation set when the run has one, else the test set (the other
  // pointer is null); with a validation set the test set is evaluated once, at the end (RunEnd).
  const EvaluationResult* test = nullptr;
  const EvaluationResult* validation = nullptr;
  // What early stopping and the best model judge: the validation set when there is one.
  const EvaluationResult& monitored() const { return validation != nullptr ? *validation : *test; }

  // Set by listeners.
  bool stop = false;
  struct BestModel {
    double score = 0.0;
    std::string path;
  };
  std::optional<BestModel> new_best;  // early stopping saved a new best model
  std::vector<SavedCheckpoint> saved;
};

// Loss scaling at the end of a run, of one process's workers.
struct LossScalingSummary {
  LossScalingMode mode = LossScalingMode::kNone;
  std::vector<double> final_scales;  // per local worker
  std::int64_t skipped_steps = 0;    // for overflow (replica-steps in averaging mode)
};

// What one process (rank) of the job used and reached, gathered to rank 0 at the end of the run
// (rank_summary.hpp).
struct RankSummary {
  int rank = 0;
  std::string host;  // its host name
  std::string node;  // its machine: host name and boot id, or NCCL_HOSTID (node_identity.hpp)
  int local_rank = 0, local_ranks = 1;  // its place among the job's processes on its machine
  int workers = 1;
  std::string backend, placement, threads;  // RunInfo's lines, as this process set up
  std::int64_t peak_rss_bytes = 0;
  std::vector<std::string> memory_reports;  // per local worker; empty where a backend has none
  std::optional<LossScalingSummary> loss_scaling;
  // Steps its workers skipped for a non-finite loss or gradient (onNonFiniteLoss: skip), counted
  // as replicas_skipped_steps counts.
  std::int64_t non_finite_skips = 0;
};

// on_finish: the run is over (completed, stopped early or by a signal).
struct RunEnd {
  TrainOutcome outcome;
  std::string stopped_by;  // "completed", "early stopping", "signal N" or "diverged: why"
  int stop_signal = 0;
  bool diverged = false;  // the loss became non-finite; the run fails once listeners are done
  int next_epoch = 0;     // the epoch a further run would start with
  std::int64_t peak_rss_bytes = 0;
  std::vector<std::string> memory_reports;  // per local worker; empty where a backend has none
  using LossScaling = LossScalingSummary;
  std::optional<LossScaling> loss_scaling;  // when loss scaling is on
  std::int64_t non_finite_skips = 0;        // the job's (RankSummary::non_finite_skips)
  // Every rank's summary in rank order (rank 0's alone after a divergence, which the ranks do
  // not all reach together); the figures above are rank 0's.
  std::vector<RankSummary> ranks;
  // The test set, evaluated once at the end by the final model when no epoch's end did: a
  // validation set was evaluated each epoch, or early stopping ended the run inside an epoch.
  const EvaluationResult* test = nullptr;
  // Whether an epoch's record already holds the final model's test figures: an end written
  // again after a kill (its last epoch's end evaluated it, in the killed process).
  bool test_in_epoch_record = false;

  // Set by listeners.
  std::optional<EarlyStoppingResult> early_stopping;
};

class TrainingListener {
 public:
  virtual ~TrainingListener() = default;

  virtual void on_start(const RunInfo&) {}
  virtual void on_sync_point(SyncEvent&) {}
  virtual void on_epoch_end(EpochEnd&) {}
  virtual void on_finish(RunEnd&) {}

  // A checkpoint is about to be written: add what the listener needs to resume to its metadata,
  // and make its own files durable (a checkpoint never refers to output a crash could lose).
  virtual void on_checkpoint_save(CheckpointState&) {}
  // The run resumes from `state`, read from `path` (before on_start): restore the listener's
  // state and cut its files back to the checkpoint's position.
  virtual void on_checkpoint_restore(const CheckpointState&, const std::string& /*path*/) {}
  // After on_checkpoint_restore: why the run restored had already ended by the listener's rule
  // (early stopping's verdict), empty while it goes on.
  virtual std::string ended_by() const { return {}; }
};

}  // namespace dl
