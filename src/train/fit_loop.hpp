// The fit loop: epochs of data-parallel rounds, an evaluation after each epoch, and the
// listeners told of each step (training_listener.hpp). It writes and prints nothing itself:
// everything a run leaves behind is a listener's.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "train/trainer.hpp"
#include "train/training_listener.hpp"
#include "train/training_state.hpp"

namespace dl {

class FitLoop {
 public:
  // `listeners` is empty on every rank but 0. All references are kept; `validation` may be null
  // (no validation set: each epoch evaluates the test set).
  FitLoop(const Config& config, const TrainOptions& options, ProcessGroup& processes,
          ParallelTrainer& trainer, const Dataset& test, const Dataset* validation,
          RunProgress& progress, Listeners& listeners);

  // Trains from info.start until the epoch limit, early stopping or a stop signal.
  TrainOutcome run(const RunInfo& info);

 private:
  template <class Event>
  void notify(void (TrainingListener::*handler)(Event&), Event& event) {
    for (const auto& listener : listeners_) ((*listener).*handler)(event);
  }
  SyncAction on_sync_point(const SyncPoint& point);
  void report_scores(SyncEvent& event);
  // A score that is not finite stops the run as diverged (exit 5): under onNonFiniteLoss: stop
  // always, under skip where the L2 term itself overflowed (parameters past float's range, which
  // skipping batches cannot bring back); early stopping's stopOnInvalidScore ends it its own way.
  void check_score_finite(const SyncPoint& point, double score);
  double worker_score(const SyncPoint& point, int worker);
  double aggregated_score(const SyncPoint& point);
  double epoch_train_loss() const;
  double mean_with_regularization(double loss_sum, std::int64_t samples) const;
  // Evaluates the epoch (rank 0); returns whether a listener stopped the run (on every rank).
  bool end_epoch(int epoch, double seconds, std::int64_t samples);
  void add_training_window(const SyncPoint& point);
  TrainOutcome finish(TrainOutcome outcome, int next_epoch, const std::string& stopped_by);
  std::optional<RunEnd::LossScaling> loss_scaling_summary();
  std::int64_t local_non_finite_skips();
  // The listeners' on_finish (rank 0), with every rank's summary.
  void notify_finish(const TrainOutcome& outcome, const std::string& stopped_by, int next_epoch,
                     const std::optional<EvaluationResult>& test, std::vector<RankSummary> ranks);
  std::vector<RankSummary> gather_ranks(const TrainOutcome& outcome);

  const Config& config_;
  const TrainOptions& options_;
  ProcessGroup& processes_;
  ParallelTrainer& trainer_;
  const Dataset& test_;
  const Dataset* validation_;
  RunProgress& progress_;
  Listeners& listeners_;

  // Score reports (output.scoreEveryIterations): when the last one was (what it showed is
  // progress_.last_score, which checkpoints keep).
  std::int64_t last_report_iteration_ = 0;
  // The iteration of the last sync point: what a run that diverged inside an epoch had trained
  // (the epoch's count is taken only when it returns).
  std::int64_t last_sync_iteration_ = 0;
  std::int64_t samples_since_report_ = 0;
  RunProgress::Clock::time_point last_report_time_;
  // The test set's accuracy at this process's last epoch end that evaluated it; none before.
  std::optional<double> last_accuracy_;
  // The iteration whose test figures an epoch's record holds (metrics.jsonl): this process's
  // last epoch end, or, resumed from an epoch's end without a validation set, the earlier
  // process's (-1: none). A run early stopping ends inside an epoch has trained past it.
  std::int64_t test_logged_iteration_ = -1;
  int stop_signal_ = 0;  // the signal that stopped the run, 0 if none
  // The steps this process's workers had applied when the epoch in progress started, or -1 for
  // an epoch resumed part-way (not judged): under onNonFiniteLoss: skip, an epoch of which none
  // was applied trained nothing.
  std::int64_t applied_before_epoch_ = -1;
  std::int64_t local_applied_steps();
  std::int64_t skips_before_epoch_ = 0;  // local_non_finite_skips at the epoch's start
  RankSummary this_rank_;  // this process's place and set-up, for the end's summary
  // DL_TRAIN_TEST_SYNC_PAUSE_MS (tests only): a pause at each sync point, so that a signal sent
  // by a test always arrives while training is still going on; the scores do not change.
  std::chrono::milliseconds test_sync_pause_{0};
};

}  // namespace dl
