// FitLoop's end: the run's outcome, the final evaluation, every rank's summary gathered and the
// listeners' on_finish, and the counts the end reports (loss scaling, skipped steps).
#include <sys/resource.h>

#include <optional>
#include <string>
#include <vector>

#include "train/evaluator.hpp"
#include "train/fit_loop.hpp"
#include "train/rank_summary.hpp"

namespace dl {

namespace {

std::int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  constexpr std::int64_t kBytesPerKilobyte = 1024;
  return static_cast<std::int64_t>(usage.ru_maxrss) * kBytesPerKilobyte;
}

}  // namespace

TrainOutcome FitLoop::finish(TrainOutcome outcome, int next_epoch, const std::string& stopped_by) {
  outcome.iterations = progress_.iteration;
  outcome.test_accuracy = last_accuracy_;
  outcome.final_score = progress_.last_score;
  // Training time only: evaluation and checkpoint writing between epochs are not counted.
  outcome.train_seconds = progress_.train_seconds();
  outcome.images_per_second =
      outcome.train_seconds > 0
          ? static_cast<double>(progress_.samples_trained) / outcome.train_seconds
          : 0.0;
  if (stop_signal_ != 0) outcome.exit_code = exit_code_for_signal(stop_signal_);
  const bool diverged = outcome.exit_code == ExitCode::kDiverged;
  // The test set by the final model (model.dlm), once, unless it diverged (its parameters are
  // not finite): with a validation set it has not been seen yet; early stopping inside an epoch
  // (maxTimeSeconds, maxScore, invalidScore) trained past the last epoch's evaluation, which
  // summary.json and evaluation.json would otherwise report as the final model's. An end written
  // again after a kill evaluates it here too: its epoch's figures were the killed process's.
  // A run stopped by a signal has no final model yet (its resume evaluates one), and a
  // scheduler's grace period after SIGTERM is too short to spend on the whole test set.
  const bool unevaluated =
      stop_signal_ == 0 &&
      (validation_ != nullptr || progress_.iteration != test_logged_iteration_ || !last_accuracy_);
  std::optional<EvaluationResult> test;
  if (unevaluated && !diverged && processes_.is_root()) {
    test.emplace(evaluate(trainer_.model(0), test_));
    outcome.test_accuracy = test->evaluation.accuracy();
  }
  std::vector<RankSummary> ranks = gather_ranks(outcome);
  if (!listeners_.empty()) notify_finish(outcome, stopped_by, next_epoch, test, std::move(ranks));
  // Every rank leaves once rank 0 has written the run's end: a signal to another rank in between
  // found its handlers given back and ended it (143), failing a job that had completed. A
  // diverged run's ranks do not end together, and wait for none.
  if (!diverged && processes_.size() > 1) processes_.barrier();
  return outcome;
}

void FitLoop::notify_finish(const TrainOutcome& outcome, const std::string& stopped_by,
                            int next_epoch, const std::optional<EvaluationResult>& test,
                            std::vector<RankSummary> ranks) {
  RankSummary& mine = ranks.front();
  RunEnd end;
  end.test = test ? &*test : nullptr;
  end.test_in_epoch_record = progress_.iteration == test_logged_iteration_;
  end.outcome = outcome;
  end.stopped_by = stopped_by;
  end.diverged = outcome.exit_code == ExitCode::kDiverged;
  end.stop_signal = stop_signal_;
  end.next_epoch = next_epoch;
  end.peak_rss_bytes = mine.peak_rss_bytes;
  end.memory_reports = mine.memory_reports;
  end.loss_scaling = job_loss_scaling(ranks, config_.parallel.mode);
  end.non_finite_skips = job_non_finite_skips(ranks, config_.parallel.mode);
  end.ranks = std::move(ranks);
  notify(&TrainingListener::on_finish, end);
}

// This process's memory and loss scaling, with every rank's on rank 0 (the others: their own).
// Every rank finishes together (stop signals, early stopping and the epoch limit are decided
// for all) except after a divergence, which averaging workers meet each on their own: then no
// rank waits for the others, and each keeps its own summary.
std::vector<RankSummary> FitLoop::gather_ranks(const TrainOutcome& outcome) {
  RankSummary mine = this_rank_;
  mine.peak_rss_bytes = peak_rss_bytes();
  for (int w = 0; w < trainer_.workers(); ++w)
    mine.memory_reports.push_back(trainer_.model(w).backend().memory_report());
  mine.loss_scaling = loss_scaling_summary();
  mine.non_finite_skips = local_non_finite_skips();
  if (outcome.exit_code == ExitCode::kDiverged || processes_.size() == 1) return {mine};
  std::vector<RankSummary> ranks = gather_rank_summaries(processes_, mine);
  return processes_.is_root() ? ranks : std::vector<RankSummary>{mine};
}

// The steps this process's workers applied.
std::int64_t FitLoop::local_applied_steps() {
  std::int64_t applied = 0;
  for (int w = 0; w < trainer_.workers(); ++w) applied += trainer_.loss_scaler(w).applied_steps();
  return applied;
}

// The steps this process's workers skipped for a non-finite loss or gradient.
std::int64_t FitLoop::local_non_finite_skips() {
  std::vector<std::int64_t> counts;
  for (int w = 0; w < trainer_.workers(); ++w)
    counts.push_back(trainer_.loss_scaler(w).non_finite_skips());
  return replicas_skipped_steps(counts, config_.parallel.mode);
}

// This process's final loss scales and the steps its workers skipped for overflow
// (replicas_skipped_steps).
std::optional<RunEnd::LossScaling> FitLoop::loss_scaling_summary() {
  const LossScaler& first = trainer_.loss_scaler(0);
  if (!first.enabled()) return std::nullopt;
  RunEnd::LossScaling summary;
  summary.mode = first.mode();
  std::vector<std::int64_t> skipped;
  for (int w = 0; w < trainer_.workers(); ++w) {
    summary.final_scales.push_back(trainer_.loss_scaler(w).scale());
    skipped.push_back(trainer_.loss_scaler(w).skipped_steps());
  }
  summary.skipped_steps = replicas_skipped_steps(skipped, config_.parallel.mode);
  return summary;
}

}  // namespace dl
