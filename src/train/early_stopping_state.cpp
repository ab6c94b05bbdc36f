// Early stopping written down: its result as JSON (early_stopping.json, summary.json) and its
// state for checkpoints, both through the one JSON writer (io/json_writer.hpp).
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "train/early_stopping.hpp"

namespace dl {

namespace {

// JSON has no infinities or NaN; the state keeps them exact as these strings.
bool is_non_finite_text(const std::string& text) {
  return text == "nan" || text == "inf" || text == "-inf";
}

// A score exactly: a number, or a non-finite one as text ("nan", "inf", "-inf").
Json exact_score(double score) {
  return std::isfinite(score) ? Json(score) : Json(fmt::format("{}", figure(score)));
}

Json reported_score(double score) {
  return std::isfinite(score) ? Json(score) : Json(nullptr);
}

CheckpointError bad_state(const std::string& what) {
  return CheckpointError(fmt::format(
      "checkpoint metadata: early-stopping state {}; the checkpoint is damaged or from another "
      "dl-train version: resume from another checkpoint or start a new run",
      what));
}

// The fields of a saved state, each checked as it is read.
class StateReader {
 public:
  explicit StateReader(const std::string& text) {
    if (!parse_json(text, state_) || !state_.is_object()) throw bad_state("is not a JSON object");
    const Json& version = field(kJsonFormatVersionKey);
    if (!version.is_number_integer() || version.get<std::int64_t>() != kJsonFormatVersion)
      throw bad_state(fmt::format("has format version {}, this dl-train reads {}", version.dump(),
                                  kJsonFormatVersion));
  }

  const Json& field(const char* key) const {
    const auto it = state_.find(key);
    if (it == state_.end()) throw bad_state(fmt::format("lacks '{}'", key));
    return *it;
  }

  std::string text(const char* key) const {
    const Json& value = field(key);
    if (!value.is_string()) throw bad_state(fmt::format("has '{}' that is not text", key));
    return value.get<std::string>();
  }

  static int integer(const Json& value, const std::string& what, int minimum) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < minimum ||
        value.get<std::int64_t>() > std::numeric_limits<int>::max())
      throw bad_state(
          fmt::format("has {} = {}, not an integer >= {}", what, value.dump(), minimum));
    return static_cast<int>(value.get<std::int64_t>());
  }
  int integer(const char* key, int minimum) const { return integer(field(key), key, minimum); }

  static double score(const Json& value, const std::string& what) {
    if (value.is_number()) return value.get<double>();
    if (value.is_string() && is_non_finite_text(value.get<std::string>()))
      return std::strtod(value.get<std::string>().c_str(), nullptr);
    throw bad_state(fmt::format("has {} = {}, not a number", what, value.dump()));
  }

 private:
  Json state_;
};

}  // namespace

Json EarlyStoppingResult::to_json() const {
  Json scores = Json::array();
  for (const auto& [epoch, score] : score_per_epoch)
    scores.push_back(Json{{"epoch", epoch}, {"score", reported_score(score)}});
  Json json = Json::object();
  json["reason"] = enum_name(reason);
  json["details"] = details;
  json["score_name"] = score_name;
  json["minimize"] = minimize;
  json["best_epoch"] = best_epoch;
  json["best_score"] = best_epoch < 0 ? Json(nullptr) : reported_score(best_score);
  json["total_epochs"] = total_epochs;
  json["score_per_epoch"] = std::move(scores);
  return json;
}

std::string EarlyStopping::save_state() const {
  Json history = Json::array();
  for (const auto& [epoch, score] : history_) history.push_back(Json{epoch, exact_score(score)});
  Json state = versioned_json_object();
  state["calculator"] = enum_name(config_.scoreCalculator);
  state["best_epoch"] = best_epoch_;
  state["best_score"] = exact_score(best_score_);
  state["stale"] = evaluations_without_improvement_;
  state["epochs"] = epochs_completed_;
  state["reason"] = enum_name(reason_);
  state["history"] = std::move(history);
  state["details"] = details_;
  return json_line(state);
}

void EarlyStopping::restore_state(const std::string& text) {
  const StateReader state(text);
  const std::string calculator = state.text("calculator");
  if (calculator != enum_name(config_.scoreCalculator)) {
    throw ConfigError(fmt::format(
        "earlyStopping.scoreCalculator: the checkpoint was trained with {}, the config says {}; "
        "resume with scoreCalculator: {} or start a new run",
        calculator, enum_name(config_.scoreCalculator), calculator));
  }
  const int best_epoch = state.integer("best_epoch", -1);
  const double best_score = StateReader::score(state.field("best_score"), "best_score");
  const int stale = state.integer("stale", 0);
  const int epochs = state.integer("epochs", 0);
  const std::string reason_name = state.text("reason");
  const std::optional<TerminationReason> reason = enum_from_name<TerminationReason>(reason_name);
  if (!reason) throw bad_state(fmt::format("has an unknown reason '{}'", reason_name));
  const Json& saved_history = state.field("history");
  if (!saved_history.is_array()) throw bad_state("has a history that is not a list");
  std::vector<std::pair<int, double>> history;
  for (const Json& entry : saved_history) {
    if (!entry.is_array() || entry.size() != 2)
      throw bad_state(
          fmt::format("has a history entry {} that is not [epoch, score]", entry.dump()));
    const int epoch = StateReader::integer(entry[0], "a history epoch", 0);
    if (epoch >= epochs || (!history.empty() && epoch <= history.back().first))
      throw bad_state(fmt::format("has history epoch {} out of order", epoch));
    history.emplace_back(epoch, StateReader::score(entry[1], "a history score"));
  }
  if (best_epoch >= epochs && best_epoch >= 0)
    throw bad_state(fmt::format("has best epoch {} beyond its {} epochs", best_epoch, epochs));
  std::string details = state.text("details");

  best_epoch_ = best_epoch;
  best_score_ = best_score;
  evaluations_without_improvement_ = stale;
  epochs_completed_ = epochs;
  history_ = std::move(history);
  reason_ = *reason;
  details_ = std::move(details);
}

}  // namespace dl
