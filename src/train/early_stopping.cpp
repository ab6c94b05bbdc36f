#include "train/early_stopping.hpp"

#include <cmath>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/epoch_number.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"

namespace dl {
namespace {

// Shortest text that reads back to the same double (also "inf" and "nan", which strtod reads).
std::string exact(double value) {
  return fmt::format("{}", figure(value));
}

std::string score_text(double score) {
  return fmt::format("{:.4f}", figure(score));
}

std::string best_text(int best_epoch, double best_score) {
  return best_epoch < 0
             ? std::string("no finite score yet")
             : fmt::format("best {} at epoch {}", score_text(best_score), epoch_number(best_epoch));
}

}  // namespace

DL_ENUM_SPELLINGS(TerminationReason, "termination reason", {TerminationReason::kNone, "none"},
                  {TerminationReason::kMaxEpochs, "maxEpochs"},
                  {TerminationReason::kPatience, "patience"},
                  {TerminationReason::kBestScoreTarget, "bestScoreTarget"},
                  {TerminationReason::kMaxTime, "maxTime"},
                  {TerminationReason::kMaxScore, "maxScore"},
                  {TerminationReason::kInvalidScore, "invalidScore"})

std::string EarlyStoppingResult::summary() const {
  std::string text =
      reason == TerminationReason::kNone
          ? std::string("Early stopping: did not stop early\n")
          : fmt::format("Early stopping: stopped by {}: {}\n", enum_name(reason), details);
  text +=
      fmt::format("  score:        {} ({} is better)\n", score_name, minimize ? "lower" : "higher");
  if (best_epoch >= 0) {
    text += fmt::format("  best epoch:   {}\n", epoch_number(best_epoch));
    text += fmt::format("  best score:   {}\n", score_text(best_score));
  } else {
    text += "  best epoch:   none (no finite score)\n";
  }
  text += fmt::format("  total epochs: {}\n", total_epochs);
  if (!score_per_epoch.empty()) {
    text += "  epoch  score\n";
    for (const auto& [epoch, score] : score_per_epoch) {
      text += fmt::format("  {:>5}  {}{}\n", epoch_number(epoch), score_text(score),
                          epoch == best_epoch ? "  (best)" : "");
    }
  }
  return text;
}

namespace {

int epoch_limit(const EarlyStoppingConfig& config, int configured_epochs) {
  return config.maxEpochs > 0 ? config.maxEpochs : configured_epochs;
}

}  // namespace

EarlyStopping::EarlyStopping(const EarlyStoppingConfig& config, int configured_epochs)
    : config_(config),
      minimize_(config.scoreCalculator == ScoreCalculator::kTestLoss),
      max_epochs_(epoch_limit(config, configured_epochs)) {}

bool EarlyStopping::should_evaluate(int epoch) const {
  return (epoch + 1) % config_.evaluateEveryNEpochs == 0 || epoch + 1 >= max_epochs_;
}

bool EarlyStopping::is_improvement(double score) const {
  return minimize_ ? score < best_score_ - config_.minImprovement
                   : score > best_score_ + config_.minImprovement;
}

bool EarlyStopping::reached_target(double score) const {
  const double target = *config_.bestScoreTarget;
  return minimize_ ? score <= target : score >= target;
}

void EarlyStopping::terminate(TerminationReason reason, std::string details) {
  if (terminated()) return;
  reason_ = reason;
  details_ = std::move(details);
}

void EarlyStopping::count_epoch(int epoch) {
  DL_CHECK(epoch >= epochs_completed_,
           fmt::format("epoch {} reported after epoch {}", epoch, epochs_completed_ - 1));
  epochs_completed_ = epoch + 1;
}

bool EarlyStopping::on_epoch_end(int epoch, double score) {
  count_epoch(epoch);
  history_.emplace_back(epoch, score);

  bool new_best = false;
  if (!std::isfinite(score)) {
    ++evaluations_without_improvement_;
    if (config_.stopOnInvalidScore)
      terminate(TerminationReason::kInvalidScore,
                fmt::format("evaluation score {} at epoch {} ({})", exact(score),
                            epoch_number(epoch), best_text(best_epoch_, best_score_)));
  } else if (best_epoch_ < 0) {
    new_best = true;
    evaluations_without_improvement_ = 0;
  } else {
    // The best model is the strictly best score; only a gain beyond minImprovement resets the
    // patience count, so a slow creep of tiny gains still ends training.
    const bool significant = is_improvement(score);
    new_best = minimize_ ? score < best_score_ : score > best_score_;
    evaluations_without_improvement_ = significant ? 0 : evaluations_without_improvement_ + 1;
  }
  if (new_best) {
    best_score_ = score;
    best_epoch_ = epoch;
  }

  if (config_.bestScoreTarget && std::isfinite(score) && reached_target(score)) {
    terminate(TerminationReason::kBestScoreTarget,
              fmt::format("score {} reached the target {} at epoch {}", score_text(score),
                          exact(*config_.bestScoreTarget), epoch_number(epoch)));
  }
  if (config_.patience > 0 && evaluations_without_improvement_ >= config_.patience) {
    const std::string span = config_.evaluateEveryNEpochs == 1
                                 ? fmt::format("{} epochs", config_.patience)
                                 : fmt::format("{} evaluations (one every {} epochs)",
                                               config_.patience, config_.evaluateEveryNEpochs);
    terminate(TerminationReason::kPatience,
              fmt::format("no improvement > {} in {} ({})", exact(config_.minImprovement), span,
                          best_text(best_epoch_, best_score_)));
  }
  if (epochs_completed_ >= max_epochs_) {
    terminate(TerminationReason::kMaxEpochs,
              fmt::format("reached the maximum of {} epochs ({})", max_epochs_,
                          best_text(best_epoch_, best_score_)));
  }
  return new_best;
}

void EarlyStopping::on_epoch_end(int epoch) {
  count_epoch(epoch);
  if (epochs_completed_ >= max_epochs_) {
    terminate(TerminationReason::kMaxEpochs,
              fmt::format("reached the maximum of {} epochs ({})", max_epochs_,
                          best_text(best_epoch_, best_score_)));
  }
}

bool EarlyStopping::on_iteration(std::int64_t iteration, double minibatch_score,
                                 double elapsed_seconds) {
  if (terminated()) return true;
  if (config_.stopOnInvalidScore && !std::isfinite(minibatch_score)) {
    terminate(TerminationReason::kInvalidScore,
              fmt::format("minibatch score {} at iteration {}", exact(minibatch_score), iteration));
  } else if (config_.maxScore && minibatch_score > *config_.maxScore) {
    terminate(TerminationReason::kMaxScore,
              fmt::format("minibatch score {} exceeded maxScore {} at iteration {}",
                          exact(minibatch_score), exact(*config_.maxScore), iteration));
  } else if (config_.maxTimeSeconds > 0.0 && elapsed_seconds >= config_.maxTimeSeconds) {
    terminate(TerminationReason::kMaxTime,
              fmt::format("training time {:.1f} s reached maxTimeSeconds {} at iteration {}",
                          elapsed_seconds, exact(config_.maxTimeSeconds), iteration));
  }
  return terminated();
}

EarlyStoppingResult EarlyStopping::result() const {
  EarlyStoppingResult result;
  result.reason = reason_;
  result.details = details_;
  result.best_epoch = best_epoch_;
  result.best_score = best_epoch_ < 0 ? 0.0 : best_score_;
  result.total_epochs = epochs_completed_;
  result.score_per_epoch = history_;
  result.score_name = enum_name(config_.scoreCalculator);
  result.minimize = minimize_;
  return result;
}

}  // namespace dl
