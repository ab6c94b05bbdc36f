// Early stopping in the manner of DL4J's EarlyStoppingConfiguration: epoch conditions (max
// epochs, patience, best-score target) judged on an evaluation score, and iteration conditions
// (max time, max minibatch score, invalid score) judged on every minibatch.
//
// Unlike DL4J, the direction of "better" follows the score: test loss is minimized, accuracy and
// F1 are maximized, so the best model kept is the one with the highest accuracy, not the lowest.
//
// Epochs are 0-based everywhere, in the API and in the text it writes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "io/json_writer.hpp"

namespace dl {

// Why training stopped. Checked in this order when several hold at the same epoch end:
// invalid score, best-score target, patience, max epochs (the first reached reason is kept).
enum class TerminationReason {
  kNone,
  kMaxEpochs,
  kPatience,  // DL4J's ScoreImprovementEpochTerminationCondition
  kBestScoreTarget,
  kMaxTime,
  kMaxScore,
  kInvalidScore,
};

// Reasons and score calculators are spelled by enum_name() (config/enum_names.hpp): "none",
// "maxEpochs", "patience", "bestScoreTarget", "maxTime", "maxScore", "invalidScore"; "testLoss",
// "accuracy", "f1".

struct EarlyStoppingResult {
  TerminationReason reason = TerminationReason::kNone;
  std::string details;  // e.g. "no improvement > 0.001 in 3 epochs (best 0.8511 at epoch 4)"
  int best_epoch = -1;  // -1 until an epoch gave a finite score
  double best_score = 0;
  int total_epochs = 0;                                 // epochs completed
  std::vector<std::pair<int, double>> score_per_epoch;  // (epoch, score), evaluated epochs only
  std::string score_name;                               // enum_name(scoreCalculator)
  bool minimize = true;

  std::string summary() const;  // multi-line text printed at the end of training
  // early_stopping.json (with its format_version) and summary.json's "early_stopping"; a score
  // that is not finite is null.
  Json to_json() const;
};

class EarlyStopping {
 public:
  // configured_epochs: the run's `epochs`, the limit when earlyStopping.maxEpochs is 0. The
  // values are the schema's to check (config_schema.cpp).
  EarlyStopping(const EarlyStoppingConfig& config, int configured_epochs);

  bool minimize() const { return minimize_; }
  // The epoch limit: earlyStopping.maxEpochs, or the run's epochs when that is 0. With early
  // stopping the fit loop runs epochs 0 .. max_epochs() - 1 unless it terminates sooner.
  int max_epochs() const { return max_epochs_; }

  // True after every evaluateEveryNEpochs-th epoch (epochs N-1, 2N-1, ...) and always for the
  // last allowed epoch, so the final model is always scored.
  bool should_evaluate(int epoch) const;

  // An evaluated epoch ended with `score`. Returns true when it is a new best (the caller saves
  // the best model then). Afterwards terminated() tells whether to stop. Non-finite scores are
  // never a best; with stopOnInvalidScore they terminate. After a termination (e.g. maxTime in
  // the middle of the epoch) the score is still recorded, but the first reason is kept.
  bool on_epoch_end(int epoch, double score);
  // An epoch ended without evaluation: counts toward total_epochs and maxEpochs only.
  void on_epoch_end(int epoch);

  // After each minibatch: its score and the seconds of training in this run so far, including
  // the time before a --resume (the trainer keeps that total in its checkpoint metadata), so
  // maxTimeSeconds bounds the whole run. Returns true when training must stop now (also when it
  // had already terminated).
  bool on_iteration(std::int64_t iteration, double minibatch_score, double elapsed_seconds);

  bool terminated() const { return reason_ != TerminationReason::kNone; }
  EarlyStoppingResult result() const;

  // For resume: the whole state (best so far, evaluations without improvement, history,
  // termination) as one line of JSON (io/json_writer.hpp), stored in checkpoint metadata.
  std::string save_state() const;
  // Throws CheckpointError when the text is not a state written by save_state (of this format
  // version), and ConfigError when it was written for another scoreCalculator (its best score
  // would mean something else). A refused state changes nothing.
  void restore_state(const std::string& state);

 private:
  bool is_improvement(double score) const;
  bool reached_target(double score) const;
  void terminate(TerminationReason reason, std::string details);
  void count_epoch(int epoch);

  EarlyStoppingConfig config_;
  bool minimize_;
  int max_epochs_;

  int best_epoch_ = -1;
  double best_score_ = 0.0;
  int evaluations_without_improvement_ = 0;
  int epochs_completed_ = 0;
  std::vector<std::pair<int, double>> history_;
  TerminationReason reason_ = TerminationReason::kNone;
  std::string details_;
};

}  // namespace dl
