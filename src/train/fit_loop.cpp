#include "train/fit_loop.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "core/epoch_number.hpp"
#include "core/error.hpp"
#include "train/early_stopping.hpp"
#include "train/evaluator.hpp"
#include "train/rank_agreement.hpp"
#include "train/rank_summary.hpp"

namespace dl {

FitLoop::FitLoop(const Config& config, const TrainOptions& options, ProcessGroup& processes,
                 ParallelTrainer& trainer, const Dataset& test, const Dataset* validation,
                 RunProgress& progress, Listeners& listeners)
    : config_(config),
      options_(options),
      processes_(processes),
      trainer_(trainer),
      test_(test),
      validation_(validation),
      progress_(progress),
      listeners_(listeners) {
  if (const char* pause = std::getenv("DL_TRAIN_TEST_SYNC_PAUSE_MS"))
    test_sync_pause_ = std::chrono::milliseconds(std::strtol(pause, nullptr, 10));
  // Every rank reads its own signals; the trainer brings them to rank 0's sync point.
  trainer_.set_outside_requests([this] {
    OutsideRequests mine;
    if (options_.stop_signal != nullptr) mine.stop_signal = options_.stop_signal->load();
    if (options_.checkpoint_request != nullptr)
      mine.checkpoint = options_.checkpoint_request->exchange(false);
    return mine;
  });
}

TrainOutcome FitLoop::run(const RunInfo& info) {
  this_rank_ = describe_this_rank(info, processes_, trainer_.workers());
  notify(&TrainingListener::on_start, info);
  // A checkpoint at round 0 was written at the end of the epoch before, which evaluated the test
  // set unless a validation set was there: its record holds the figures.
  if (!info.resumed_from.empty() && info.start.epoch > 0 && info.start.round == 0 &&
      validation_ == nullptr)
    test_logged_iteration_ = progress_.iteration;
  const int max_epochs = info.max_epochs;
  last_report_iteration_ = progress_.iteration;
  skips_before_epoch_ = local_non_finite_skips();  // a resumed run's count is restored
  progress_.start();
  last_report_time_ = RunProgress::Clock::now();
  TrainOutcome outcome;
  outcome.run_directory = info.run_directory;
  // The run's epochs, those before a resume too: resumed at an epoch's end and stopped in the
  // next, it said "0 epoch(s)" of a run that had trained 2.
  outcome.epochs_completed = info.start.epoch;
  std::string stopped_by = "completed";
  int epoch = info.start.epoch;
  for (std::int64_t first_round = info.start.round; epoch < max_epochs; ++epoch, first_round = 0) {
    const auto epoch_start = RunProgress::Clock::now();
    // The images/s of the epoch's first score report count from here: the evaluation and the
    // outputs written at the previous epoch's end are not training time.
    last_report_time_ = epoch_start;
    const std::int64_t samples_before = progress_.samples_trained;
    applied_before_epoch_ = first_round > 0 ? -1 : local_applied_steps();
    std::int64_t next = 0;
    try {
      next = trainer_.run_epoch(epoch, first_round, progress_.iteration,
                                [this](const SyncPoint& point) { return on_sync_point(point); });
    } catch (const Error& e) {
      // A diverged run still gets its summary.json, report and console ending, then fails as
      // before (main() prints the error; exit 5). The trainer rethrows a worker's
      // DivergenceError as an Error with its exit code.
      if (e.code() != ExitCode::kDiverged) throw;
      outcome.exit_code = ExitCode::kDiverged;
      progress_.iteration = std::max(progress_.iteration, last_sync_iteration_);
      progress_.round_seconds += RunProgress::since(epoch_start);
      finish(outcome, epoch, std::string("diverged: ") + e.what());
      throw;
    }
    processes_.broadcast(&stop_signal_, sizeof(stop_signal_), 0);
    const double epoch_seconds = RunProgress::since(epoch_start);
    progress_.round_seconds += epoch_seconds;
    if (next < trainer_.rounds_in_epoch(epoch) || stop_signal_ != 0) {
      stopped_by = stop_signal_ != 0 ? fmt::format("signal {}", stop_signal_) : "early stopping";
      break;
    }
    check_replicas_agree(processes_, trainer_.model(0), epoch);
    const bool stop = end_epoch(epoch, epoch_seconds, progress_.samples_trained - samples_before);
    outcome.epochs_completed = epoch + 1;
    if (stop) {
      // Early stopping's verdict at an epoch's end (patience, a score reached, its maxEpochs):
      // summary.json says so, as for a stop inside an epoch, unless the epochs ran out anyway.
      if (epoch + 1 < max_epochs) stopped_by = "early stopping";
      ++epoch;
      break;
    }
  }
  if (epoch >= max_epochs) outcome.epochs_completed = max_epochs;
  return finish(outcome, epoch, stopped_by);
}

SyncAction FitLoop::on_sync_point(const SyncPoint& point) {
  // Counted at sync points only, so a resumed run's total matches an uninterrupted one.
  last_sync_iteration_ = point.iteration;
  samples_since_report_ += point.samples_since_previous;
  progress_.samples_trained += point.samples_since_previous;
  if (test_sync_pause_.count() > 0) std::this_thread::sleep_for(test_sync_pause_);
  add_training_window(point);
  SyncEvent event{point};
  event.samples_trained = progress_.samples_trained;
  event.run_seconds = progress_.run_seconds();
  event.process_seconds = progress_.process_seconds();
  event.compute_aggregated_score = [this, &point] { return aggregated_score(point); };
  event.compute_epoch_train_loss = [this] { return epoch_train_loss(); };
  const std::int64_t every = config_.output.scoreEveryIterations;
  event.report = point.iteration / every > last_report_iteration_ / every || point.end_of_epoch;
  if (event.report) report_scores(event);
  event.stop_signal = point.requests.stop_signal;
  event.stop_signal_rank = point.requests.stop_signal_rank;
  event.checkpoint_requested = point.requests.checkpoint;
  notify(&TrainingListener::on_sync_point, event);
  if (event.stop_signal != 0) stop_signal_ = event.stop_signal;
  return event.stop || event.stop_signal != 0 ? SyncAction::kStop : SyncAction::kContinue;
}

// The rows of scores.csv: one sample-weighted score over all workers (reportScoreAfterAveraging,
// or a single worker in the whole job), else one per worker of the job (global index) that had
// samples; the console shows the first. Rows follow the job's workers, not this process's, so
// N ranks x M workers write the rows one process with N x M workers writes.
void FitLoop::report_scores(SyncEvent& event) {
  const SyncPoint& point = event.point;
  std::optional<double> score;
  if (config_.parallel.reportScoreAfterAveraging || trainer_.global_workers() == 1) {
    score = event.aggregated_score();
    event.scores.push_back(ScoreRow{-1, *score});
  } else {
    for (int w = 0; w < trainer_.global_workers(); ++w) {
      if (point.samples[static_cast<std::size_t>(w)] == 0) continue;
      event.scores.push_back(ScoreRow{w, worker_score(point, w)});
      if (w == 0) score = event.scores.back().score;
    }
  }
  // Checked before it counts as reported: a run that diverges here ends with the last score
  // scores.csv holds as its final_score, not the one refused.
  check_score_finite(point, score.value_or(progress_.last_score.value_or(0.0)));
  if (score) progress_.last_score = score;
  event.score = progress_.last_score.value_or(0.0);
  const double elapsed = RunProgress::since(last_report_time_);
  event.images_per_second =
      elapsed > 0.0 ? static_cast<double>(samples_since_report_) / elapsed : 0.0;
  last_report_time_ = RunProgress::Clock::now();
  samples_since_report_ = 0;
  last_report_iteration_ = point.iteration;
}

// The loss of a diverging network can stay finite (log-softmax is stable in huge logits, and a
// ReLU or max pooling passes NaN activations on as 0) while its weights grow past float's range
// or turn NaN: the score went inf, then NaN (the L2 term's sum of squares), and the run ended
// "done" with exit 0, saving a model of NaN weights.
void FitLoop::check_score_finite(const SyncPoint& point, double score) {
  Model& model = trainer_.model(0);
  const bool parameters_finite = model.backend().all_finite(model.parameter_count(),
                                                            model.parameters());
  // Every step of a whole epoch skipped (onNonFiniteLoss: skip): the parameters stay finite,
  // but every loss from them is not, and the run went on "completed" at chance accuracy. In
  // synchronous mode every rank counts alike; averaging workers each judge their own, and the
  // first rank that finds none applied ends the job.
  // Only skip's rule: dynamic loss scaling's overflows are steps not applied too, and have
  // their own end (the scale falling below its minimum).
  if (config_.onNonFiniteLoss == NonFiniteAction::kSkip && point.end_of_epoch &&
      applied_before_epoch_ >= 0 && local_applied_steps() == applied_before_epoch_ &&
      parameters_finite)
    throw DivergenceError(fmt::format(
        "epoch {}: every step of the epoch was skipped, its loss or gradient not finite "
        "(onNonFiniteLoss: skip), so the epoch trained nothing; lower updater.learningRate",
        epoch_number(point.epoch)));
  if (std::isfinite(score) && parameters_finite) return;
  // Early stopping's own condition ends such a run its way (the best model kept, exit 0).
  if (config_.earlyStopping.enabled && config_.earlyStopping.stopOnInvalidScore &&
      parameters_finite)
    return;
  const double l2 = trainer_.optimizer(0).regularization_score(model.parameters());
  if (config_.onNonFiniteLoss == NonFiniteAction::kSkip && std::isfinite(l2) && parameters_finite)
    return;
  const char* why = !parameters_finite   ? ": the parameters are not finite"
                    : !std::isfinite(l2) ? ": its L2 term overflowed (the sum of the squared "
                                           "weights passed float's range: weights of 1e19 or more)"
                                         : "";
  throw DivergenceError(fmt::format(
      "epoch {}, iteration {}: the score is not finite (NaN or Inf){}; lower updater.learningRate",
      epoch_number(point.epoch), point.iteration, why));
}

// `worker` is a global index. The regularization term is taken from local replica 0: at a sync
// point every replica of the job holds the same parameters (synchronous steps are identical,
// averaging has just averaged them; a lone worker is replica 0), so it is each worker's own.
double FitLoop::worker_score(const SyncPoint& point, int worker) {
  const std::size_t w = static_cast<std::size_t>(worker);
  return mean_with_regularization(point.loss_sum[w], point.samples[w]);
}

double FitLoop::aggregated_score(const SyncPoint& point) {
  double loss = 0.0;
  std::int64_t samples = 0;
  for (std::size_t w = 0; w < point.samples.size(); ++w) {
    loss += point.loss_sum[w];
    samples += point.samples[w];
  }
  return mean_with_regularization(loss, samples);
}

// Keras's loss includes the regularization: the L2 term (0.5 * l2 * sum(w^2), as in scores.csv)
// at the current parameters, which every replica holds at a sync point. At the epoch's end it is
// taken at the epoch's last parameters, so it depends on neither the sync points nor a resume
// (0 without l2 and l2Bias).
double FitLoop::epoch_train_loss() const {
  if (progress_.epoch_samples == 0) return 0.0;
  return mean_with_regularization(progress_.epoch_loss, progress_.epoch_samples);
}

// DL4J's score: the mean data loss (0 without samples) plus the L2 term at the current
// parameters, which every replica holds at a sync point.
double FitLoop::mean_with_regularization(double loss_sum, std::int64_t samples) const {
  return (samples > 0 ? loss_sum / static_cast<double>(samples) : 0.0) +
         trainer_.optimizer(0).regularization_score(trainer_.model(0).parameters());
}

void FitLoop::add_training_window(const SyncPoint& point) {
  for (std::size_t w = 0; w < point.window_samples.size(); ++w) {
    progress_.epoch_loss += point.window_loss_sum[w];
    progress_.epoch_correct += point.window_correct[w];
    progress_.epoch_samples += point.window_samples[w];
  }
}

bool FitLoop::end_epoch(int epoch, double seconds, std::int64_t samples) {
  int stop = 0;
  const std::int64_t skipped = local_non_finite_skips();
  if (skipped > skips_before_epoch_ && processes_.is_root()) {
    // Said at each epoch that had some: a run that skips more and more is on its way to diverge.
    const bool job_wide =
        processes_.size() == 1 || config_.parallel.mode == ParallelMode::kSynchronous;
    std::cerr << fmt::format(
        "dl-train: warning: epoch {}: {} step(s){} skipped, their loss or gradient not finite "
        "(onNonFiniteLoss: skip)\n",
        epoch_number(epoch), skipped - skips_before_epoch_, job_wide ? "" : " of rank 0's workers");
  }
  skips_before_epoch_ = skipped;
  if (processes_.is_root()) {
    std::optional<EvaluationResult> test, validation;
    if (validation_ != nullptr) {
      validation.emplace(evaluate(trainer_.model(0), *validation_));
    } else {
      test.emplace(evaluate(trainer_.model(0), test_));
      last_accuracy_ = test->evaluation.accuracy();
      test_logged_iteration_ = progress_.iteration;
    }
    EpochEnd event;
    event.epoch = epoch;
    event.iteration = progress_.iteration;
    event.epoch_seconds = seconds;
    event.epoch_samples = samples;
    event.images_per_second = seconds > 0 ? static_cast<double>(samples) / seconds : 0.0;
    if (progress_.epoch_samples > 0) {
      event.train_loss = epoch_train_loss();
      event.train_accuracy = progress_.epoch_correct / static_cast<double>(progress_.epoch_samples);
    }
    // Reset before the listeners save the epoch-end checkpoint, which starts the next epoch.
    progress_.epoch_loss = progress_.epoch_correct = 0.0;
    progress_.epoch_samples = 0;
    event.test = test ? &*test : nullptr;
    event.validation = validation ? &*validation : nullptr;
    notify(&TrainingListener::on_epoch_end, event);
    stop = event.stop ? 1 : 0;
  }
  // The epoch-end checkpoint above collects the other ranks' replicas while they wait here.
  return trainer_.share_decision(stop) != 0;
}

double SyncEvent::aggregated_score() const {
  if (!aggregated_) aggregated_ = compute_aggregated_score();
  return *aggregated_;
}

}  // namespace dl
