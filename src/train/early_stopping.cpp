#include "train/early_stopping.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/error.hpp"

namespace dl {
namespace {

// The saved state: one line "<tag>;key=value;...;details=<text>". The tag names the layout so a
// future change can still read (or clearly refuse) an old checkpoint.
constexpr const char* kStateTag = "dl-early-stopping v1";
constexpr char kFieldSeparator = ';';
constexpr char kHistorySeparator = ',';
constexpr char kEpochScoreSeparator = ':';

// Shortest text that reads back to the same double (also "inf" and "nan", which strtod reads).
std::string exact(double value) {
  return fmt::format("{}", value);
}

std::string json_number(double value) {
  return std::isfinite(value) ? exact(value) : "null";
}

std::string json_string(std::string_view text) {
  constexpr unsigned char kFirstPrintable = 0x20;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < kFirstPrintable) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(ch)));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string score_text(double score) {
  return fmt::format("{:.4f}", score);
}

std::string best_text(int best_epoch, double best_score) {
  return best_epoch < 0 ? std::string("no finite score yet")
                        : fmt::format("best {} at epoch {}", score_text(best_score), best_epoch);
}

CheckpointError bad_state(const std::string& what) {
  return CheckpointError(fmt::format(
      "checkpoint metadata: early-stopping state {}; the checkpoint is damaged or from another "
      "dl-train version: resume from another checkpoint or start a new run",
      what));
}

// Reads the state line field by field, in the order save_state writes them.
class StateReader {
 public:
  explicit StateReader(const std::string& text) : text_(text) {
    const std::string tag = std::string(kStateTag) + kFieldSeparator;
    if (text_.compare(0, tag.size(), tag) != 0)
      throw bad_state("does not start with '" + tag + "'");
    pos_ = tag.size();
  }

  // The value of `key`, up to the next separator (or the end, for the last field).
  std::string field(const std::string& key, bool last = false) {
    const std::string prefix = key + "=";
    if (text_.compare(pos_, prefix.size(), prefix) != 0)
      throw bad_state(fmt::format("lacks '{}' at character {}", prefix, pos_));
    const std::size_t begin = pos_ + prefix.size();
    const std::size_t end = last ? text_.size() : text_.find(kFieldSeparator, begin);
    if (end == std::string::npos) throw bad_state(fmt::format("ends inside field '{}'", key));
    pos_ = last ? end : end + 1;
    return text_.substr(begin, end - begin);
  }

  static double to_double(const std::string& value, const std::string& key) {
    errno = 0;
    char* end = nullptr;
    const double parsed = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE)
      throw bad_state(fmt::format("has '{}' = '{}', not a number", key, value));
    return parsed;
  }

  static int to_int(const std::string& value, const std::string& key, int minimum) {
    errno = 0;
    char* end = nullptr;
    const long parsed = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || end != value.c_str() + value.size() || errno == ERANGE ||
        parsed < minimum || parsed > std::numeric_limits<int>::max())
      throw bad_state(fmt::format("has '{}' = '{}', not an integer >= {}", key, value, minimum));
    return static_cast<int>(parsed);
  }

 private:
  const std::string& text_;
  std::size_t pos_ = 0;
};

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
    text += fmt::format("  best epoch:   {}\n", best_epoch);
    text += fmt::format("  best score:   {}\n", score_text(best_score));
  } else {
    text += "  best epoch:   none (no finite score)\n";
  }
  text += fmt::format("  total epochs: {}\n", total_epochs);
  if (!score_per_epoch.empty()) {
    text += "  epoch  score\n";
    for (const auto& [epoch, score] : score_per_epoch) {
      text += fmt::format("  {:>5}  {}{}\n", epoch, score_text(score),
                          epoch == best_epoch ? "  (best)" : "");
    }
  }
  return text;
}

std::string EarlyStoppingResult::to_json() const {
  std::string scores;
  for (const auto& [epoch, score] : score_per_epoch) {
    if (!scores.empty()) scores += ", ";
    scores += fmt::format("{{\"epoch\": {}, \"score\": {}}}", epoch, json_number(score));
  }
  return fmt::format(
      "{{\"reason\": {}, \"details\": {}, \"score_name\": {}, \"minimize\": {}, \"best_epoch\": "
      "{}, "
      "\"best_score\": {}, \"total_epochs\": {}, \"score_per_epoch\": [{}]}}",
      json_string(enum_name(reason)), json_string(details), json_string(score_name),
      minimize ? "true" : "false", best_epoch, best_epoch < 0 ? "null" : json_number(best_score),
      total_epochs, scores);
}

namespace {

int epoch_limit(const EarlyStoppingConfig& config, int configured_epochs) {
  return config.maxEpochs > 0 ? config.maxEpochs : configured_epochs;
}

}  // namespace

int epoch_limit(const Config& config) {
  return config.earlyStopping.enabled ? epoch_limit(config.earlyStopping, config.epochs)
                                      : config.epochs;
}

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
                fmt::format("evaluation score {} at epoch {} ({})", score, epoch,
                            best_text(best_epoch_, best_score_)));
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
                          exact(*config_.bestScoreTarget), epoch));
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
              fmt::format("minibatch score {} at iteration {}", minibatch_score, iteration));
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

std::string EarlyStopping::save_state() const {
  std::string history;
  for (const auto& [epoch, score] : history_) {
    if (!history.empty()) history += kHistorySeparator;
    history += fmt::format("{}{}{}", epoch, kEpochScoreSeparator, exact(score));
  }
  // details is last: it is free text and may hold any character but a newline.
  return fmt::format(
      "{0};calculator={1}{2}best_epoch={3}{2}best_score={4}{2}stale={5}{2}epochs={6}{2}"
      "reason={7}{2}history={8}{2}details={9}",
      kStateTag, enum_name(config_.scoreCalculator), kFieldSeparator, best_epoch_,
      exact(best_score_), evaluations_without_improvement_, epochs_completed_, enum_name(reason_),
      history, details_);
}

void EarlyStopping::restore_state(const std::string& state) {
  StateReader reader(state);
  const std::string calculator = reader.field("calculator");
  if (calculator != enum_name(config_.scoreCalculator)) {
    throw ConfigError(fmt::format(
        "earlyStopping.scoreCalculator: the checkpoint was trained with {}, the config says {}; "
        "resume with scoreCalculator: {} or start a new run",
        calculator, enum_name(config_.scoreCalculator), calculator));
  }
  const int best_epoch = StateReader::to_int(reader.field("best_epoch"), "best_epoch", -1);
  const double best_score = StateReader::to_double(reader.field("best_score"), "best_score");
  const int stale = StateReader::to_int(reader.field("stale"), "stale", 0);
  const int epochs = StateReader::to_int(reader.field("epochs"), "epochs", 0);
  const std::string reason_name = reader.field("reason");
  const std::string history_text = reader.field("history");
  const std::string details = reader.field("details", /*last=*/true);

  const std::optional<TerminationReason> reason = enum_from_name<TerminationReason>(reason_name);
  if (!reason) throw bad_state(fmt::format("has an unknown reason '{}'", reason_name));

  std::vector<std::pair<int, double>> history;
  std::size_t begin = 0;
  while (begin < history_text.size()) {
    std::size_t end = history_text.find(kHistorySeparator, begin);
    if (end == std::string::npos) end = history_text.size();
    const std::string entry = history_text.substr(begin, end - begin);
    const std::size_t colon = entry.find(kEpochScoreSeparator);
    if (colon == std::string::npos)
      throw bad_state(
          fmt::format("has a history entry '{}' without '{}'", entry, kEpochScoreSeparator));
    const int epoch = StateReader::to_int(entry.substr(0, colon), "history epoch", 0);
    if (epoch >= epochs || (!history.empty() && epoch <= history.back().first))
      throw bad_state(fmt::format("has history epoch {} out of order", epoch));
    history.emplace_back(epoch, StateReader::to_double(entry.substr(colon + 1), "history score"));
    begin = end + 1;
  }
  if (best_epoch >= epochs && best_epoch >= 0)
    throw bad_state(fmt::format("has best epoch {} beyond its {} epochs", best_epoch, epochs));

  best_epoch_ = best_epoch;
  best_score_ = best_score;
  evaluations_without_improvement_ = stale;
  epochs_completed_ = epochs;
  history_ = std::move(history);
  reason_ = *reason;
  details_ = details;
}

}  // namespace dl
