#include "train/early_stopping.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include <catch2/catch.hpp>

#include "config/config_loader.hpp"
#include "core/error.hpp"

using Catch::Matchers::Contains;

namespace {

constexpr int kRunEpochs = 10;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

dl::EarlyStoppingConfig config_for(dl::ScoreCalculator calculator) {
  dl::EarlyStoppingConfig config;
  config.enabled = true;
  config.scoreCalculator = calculator;
  return config;
}

// Feeds one score per epoch from epoch 0; returns which epochs were reported as a new best.
std::vector<int> feed(dl::EarlyStopping& stopping, const std::vector<double>& scores,
                      int first_epoch = 0) {
  std::vector<int> bests;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const int epoch = first_epoch + static_cast<int>(i);
    if (stopping.on_epoch_end(epoch, scores[i])) bests.push_back(epoch);
  }
  return bests;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("EarlyStopping: accuracy and F1 keep the highest score, test loss the lowest") {
  const std::vector<double> scores = {0.80, 0.85, 0.83, 0.84};
  for (auto calculator : {dl::ScoreCalculator::kAccuracy, dl::ScoreCalculator::kF1}) {
    dl::EarlyStopping stopping(config_for(calculator), kRunEpochs);
    CHECK_FALSE(stopping.minimize());
    CHECK(feed(stopping, scores) == std::vector<int>{0, 1});
    CHECK(stopping.result().best_epoch == 1);
    CHECK(stopping.result().best_score == 0.85);
  }
  dl::EarlyStopping loss(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  CHECK(loss.minimize());
  CHECK(feed(loss, scores) == std::vector<int>{0});
  CHECK(loss.result().best_epoch == 0);
  CHECK(loss.result().best_score == 0.80);
  CHECK_FALSE(loss.terminated());
}

TEST_CASE(
    "EarlyStopping: patience counts evaluations without an improvement beyond minImprovement") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  config.patience = 2;
  config.minImprovement = 0.01;
  dl::EarlyStopping stopping(config, kRunEpochs);
  // 1.0 best; 0.95 improves by 0.05; 0.945 and 0.944 are better but by less than 0.01: they are
  // the best models, yet count as no improvement, so the second one ends training.
  CHECK(feed(stopping, {1.0, 0.95, 0.945}) == std::vector<int>{0, 1, 2});
  CHECK_FALSE(stopping.terminated());
  CHECK(stopping.on_epoch_end(3, 0.944));
  REQUIRE(stopping.terminated());
  const dl::EarlyStoppingResult result = stopping.result();
  CHECK(result.reason == dl::TerminationReason::kPatience);
  CHECK(result.best_epoch == 3);
  CHECK(result.best_score == 0.944);
  CHECK(result.total_epochs == 4);
  CHECK(result.details == "no improvement > 0.01 in 2 epochs (best 0.9440 at epoch 4)");
}

TEST_CASE("EarlyStopping: an improvement resets the patience count") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  config.patience = 2;
  dl::EarlyStopping stopping(config, kRunEpochs);
  // no improvement count after each epoch: 0, 1, 0, 1, 2 -> stops at epoch 4.
  feed(stopping, {0.5, 0.4, 0.6, 0.6});
  CHECK_FALSE(stopping.terminated());
  stopping.on_epoch_end(4, 0.55);
  CHECK(stopping.result().reason == dl::TerminationReason::kPatience);
  CHECK(stopping.result().best_epoch == 2);
}

TEST_CASE("EarlyStopping: patience 0 never stops") {
  dl::EarlyStopping stopping(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  feed(stopping, {1.0, 2.0, 3.0, 4.0, 5.0, 6.0});
  CHECK_FALSE(stopping.terminated());
}

TEST_CASE("EarlyStopping: evaluation every N epochs and always at the last allowed epoch") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  config.evaluateEveryNEpochs = 2;
  config.maxEpochs = 5;
  config.patience = 2;
  dl::EarlyStopping stopping(config, kRunEpochs);
  CHECK_FALSE(stopping.should_evaluate(0));
  CHECK(stopping.should_evaluate(1));
  CHECK_FALSE(stopping.should_evaluate(2));
  CHECK(stopping.should_evaluate(3));
  CHECK(stopping.should_evaluate(4));  // the last of 5 epochs

  stopping.on_epoch_end(0);
  stopping.on_epoch_end(1, 0.9);
  stopping.on_epoch_end(2);
  stopping.on_epoch_end(3, 0.8);
  CHECK_FALSE(stopping.terminated());
  stopping.on_epoch_end(4, 0.85);  // second evaluation without improvement, also the last epoch
  const dl::EarlyStoppingResult result = stopping.result();
  CHECK(result.reason == dl::TerminationReason::kPatience);  // patience is checked before maxEpochs
  CHECK(contains(result.details, "in 2 evaluations (one every 2 epochs)"));
  CHECK(result.total_epochs == 5);
  CHECK(result.score_per_epoch.size() == 3);
}

TEST_CASE("EarlyStopping: maxEpochs, or the run's epochs when it is 0") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  dl::EarlyStopping by_run(config, 3);
  CHECK(by_run.max_epochs() == 3);
  by_run.on_epoch_end(0, 1.0);
  by_run.on_epoch_end(1);
  CHECK_FALSE(by_run.terminated());
  by_run.on_epoch_end(2, 0.5);
  CHECK(by_run.result().reason == dl::TerminationReason::kMaxEpochs);
  CHECK(by_run.result().details == "reached the maximum of 3 epochs (best 0.5000 at epoch 3)");

  config.maxEpochs = 2;
  dl::EarlyStopping by_config(config, kRunEpochs);
  CHECK(by_config.max_epochs() == 2);
  CHECK(by_config.should_evaluate(1));
  by_config.on_epoch_end(0);
  CHECK_FALSE(by_config.terminated());
  by_config.on_epoch_end(1);
  CHECK(by_config.result().reason == dl::TerminationReason::kMaxEpochs);
  CHECK(by_config.result().total_epochs == 2);
}

TEST_CASE("EarlyStopping: bestScoreTarget is reached from the score's side") {
  dl::EarlyStoppingConfig accuracy = config_for(dl::ScoreCalculator::kAccuracy);
  accuracy.bestScoreTarget = 0.9;
  dl::EarlyStopping up(accuracy, kRunEpochs);
  up.on_epoch_end(0, 0.85);
  CHECK_FALSE(up.terminated());
  up.on_epoch_end(1, 0.9);  // >= target
  CHECK(up.result().reason == dl::TerminationReason::kBestScoreTarget);
  CHECK(up.result().best_epoch == 1);
  CHECK(up.result().details == "score 0.9000 reached the target 0.9 at epoch 2");

  dl::EarlyStoppingConfig loss = config_for(dl::ScoreCalculator::kTestLoss);
  loss.bestScoreTarget = 0.1;
  dl::EarlyStopping down(loss, kRunEpochs);
  down.on_epoch_end(0, 0.9);  // a high accuracy-like value must not count for a loss
  CHECK_FALSE(down.terminated());
  down.on_epoch_end(1, 0.1);  // <= target
  CHECK(down.result().reason == dl::TerminationReason::kBestScoreTarget);
}

TEST_CASE("EarlyStopping: maxTimeSeconds stops at the first iteration past the limit") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  config.maxTimeSeconds = 60.0;
  dl::EarlyStopping stopping(config, kRunEpochs);
  CHECK_FALSE(stopping.on_iteration(1, 0.5, 30.0));
  CHECK(stopping.on_iteration(2, 0.5, 60.0));
  CHECK(stopping.result().reason == dl::TerminationReason::kMaxTime);
  CHECK(contains(stopping.result().details, "reached maxTimeSeconds 60 at iteration 2"));
  CHECK(stopping.on_iteration(3, 0.5, 61.0));  // stays stopped

  dl::EarlyStopping unlimited(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  CHECK_FALSE(unlimited.on_iteration(1, 0.5, 1e9));
}

TEST_CASE("EarlyStopping: maxScore stops when the minibatch score exceeds it") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  config.maxScore = 10.0;
  dl::EarlyStopping stopping(config, kRunEpochs);
  CHECK_FALSE(stopping.on_iteration(5, 10.0, 0.0));  // equal is not above
  CHECK(stopping.on_iteration(6, 10.5, 0.0));
  CHECK(stopping.result().reason == dl::TerminationReason::kMaxScore);
  CHECK(stopping.result().details == "minibatch score 10.5 exceeded maxScore 10 at iteration 6");
}

TEST_CASE("EarlyStopping: NaN or infinite scores stop training unless disabled") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  for (double bad : {kNaN, kInf, -kInf}) {
    dl::EarlyStopping stopping(config, kRunEpochs);
    CHECK(stopping.on_iteration(7, bad, 0.0));
    CHECK(stopping.result().reason == dl::TerminationReason::kInvalidScore);
    CHECK(contains(stopping.result().details, "at iteration 7"));
  }

  dl::EarlyStopping at_epoch(config, kRunEpochs);
  CHECK(at_epoch.on_epoch_end(0, 0.7));
  CHECK_FALSE(at_epoch.on_epoch_end(1, kNaN));  // never a best, even for a minimized score
  CHECK(at_epoch.result().reason == dl::TerminationReason::kInvalidScore);
  CHECK(at_epoch.result().best_epoch == 0);

  config.stopOnInvalidScore = false;
  dl::EarlyStopping tolerant(config, kRunEpochs);
  CHECK_FALSE(tolerant.on_iteration(1, kNaN, 0.0));
  CHECK_FALSE(tolerant.on_epoch_end(0, kNaN));
  CHECK_FALSE(tolerant.terminated());
  CHECK(tolerant.on_epoch_end(1, 0.9));  // the first finite score becomes the best
}

TEST_CASE("EarlyStopping: the first reason is kept") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  config.maxTimeSeconds = 10.0;
  dl::EarlyStopping stopping(config, kRunEpochs);
  CHECK(stopping.on_iteration(1, 0.3, 11.0));
  // The trainer may still score the interrupted epoch: recorded, but maxTime stays the reason.
  CHECK(stopping.on_epoch_end(0, 0.7));
  CHECK(stopping.result().reason == dl::TerminationReason::kMaxTime);
  CHECK(stopping.result().best_epoch == 0);
}

TEST_CASE("EarlyStopping: summary and JSON describe the outcome") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  config.patience = 2;
  config.minImprovement = 0.001;
  dl::EarlyStopping stopping(config, kRunEpochs);
  feed(stopping, {0.80, 0.8511, 0.85, 0.8505});
  const dl::EarlyStoppingResult result = stopping.result();

  const std::string summary = result.summary();
  CHECK(contains(summary,
                 "stopped by patience: no improvement > 0.001 in 2 epochs "
                 "(best 0.8511 at epoch 2)"));
  CHECK(contains(summary, "accuracy (higher is better)"));
  CHECK(contains(summary, "best epoch:   2\n"));
  CHECK(contains(summary, "best score:   0.8511\n"));
  CHECK(contains(summary, "total epochs: 4\n"));
  // The text counts epochs from 1 (core/epoch_number.hpp); the JSON keeps the index.
  CHECK(contains(summary, "      2  0.8511  (best)\n"));
  CHECK(contains(summary, "      4  0.8505\n"));

  const YAML::Node root = YAML::Load(dl::json_document(result.to_json()));
  REQUIRE(root.IsMap());
  CHECK(root["reason"].as<std::string>() == "patience");
  CHECK(root["details"].as<std::string>() == result.details);
  CHECK(root["score_name"].as<std::string>() == "accuracy");
  CHECK_FALSE(root["minimize"].as<bool>());
  CHECK(root["best_epoch"].as<int>() == 1);
  CHECK(root["best_score"].as<double>() == 0.8511);
  CHECK(root["total_epochs"].as<int>() == 4);
  REQUIRE(root["score_per_epoch"].size() == 4);
  CHECK(root["score_per_epoch"][2]["epoch"].as<int>() == 2);
  CHECK(root["score_per_epoch"][2]["score"].as<double>() == 0.85);
}

TEST_CASE("EarlyStopping: JSON writes non-finite scores as null") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  dl::EarlyStopping stopping(config, kRunEpochs);
  stopping.on_epoch_end(0, kNaN);
  const std::string json = dl::json_document(stopping.result().to_json());
  CHECK(contains(json, "\"score\": null"));
  CHECK(contains(json, "\"best_score\": null"));
  CHECK(contains(stopping.result().summary(), "best epoch:   none"));
}

TEST_CASE("EarlyStopping: save and restore continue exactly where training stopped") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  config.patience = 3;
  config.minImprovement = 0.01;
  config.maxTimeSeconds = 100.0;
  const std::vector<double> before = {0.5, 0.71, 0.7, 1.0 / 3.0};
  const std::vector<double> after = {0.705};

  dl::EarlyStopping uninterrupted(config, kRunEpochs);
  feed(uninterrupted, before);
  CHECK_FALSE(uninterrupted.on_iteration(40, 0.4, 40.0));
  const std::string state = uninterrupted.save_state();
  CHECK(state.find('\n') == std::string::npos);  // one line of checkpoint metadata

  dl::EarlyStopping resumed(config, kRunEpochs);
  resumed.restore_state(state);
  CHECK(resumed.save_state() == state);
  const dl::EarlyStoppingResult restored = resumed.result();
  CHECK(restored.best_epoch == 1);
  CHECK(restored.best_score == 0.71);
  CHECK(restored.total_epochs == 4);
  REQUIRE(restored.score_per_epoch.size() == 4);
  CHECK(restored.score_per_epoch[3].second == 1.0 / 3.0);  // bit-exact

  feed(uninterrupted, after, 4);
  feed(resumed, after, 4);
  // Epochs 2, 3 and 4 bring no gain beyond 0.01 over 0.71: patience 3 ends at epoch 4, which
  // only holds when the count of 2 from before the checkpoint was restored.
  CHECK(resumed.result().reason == dl::TerminationReason::kPatience);
  CHECK(resumed.result().best_epoch == uninterrupted.result().best_epoch);
  CHECK(resumed.result().details == uninterrupted.result().details);
  CHECK(resumed.result().total_epochs == 5);

  // The caller's elapsed time spans the whole run, so the 100 s limit is not restarted.
  dl::EarlyStopping timed(config, kRunEpochs);
  timed.restore_state(state);
  CHECK_FALSE(timed.on_iteration(41, 0.4, 99.0));
  CHECK(timed.on_iteration(42, 0.4, 100.0));
  CHECK(timed.result().reason == dl::TerminationReason::kMaxTime);
}

TEST_CASE("EarlyStopping: a terminated state restores as terminated") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kTestLoss);
  config.maxScore = 1.0;
  dl::EarlyStopping stopping(config, kRunEpochs);
  stopping.on_iteration(3, 2.0, 1.0);
  dl::EarlyStopping resumed(config, kRunEpochs);
  resumed.restore_state(stopping.save_state());
  CHECK(resumed.terminated());
  CHECK(resumed.result().reason == dl::TerminationReason::kMaxScore);
  CHECK(resumed.result().details == stopping.result().details);
}

TEST_CASE("EarlyStopping: the state is one JSON line that keeps non-finite scores exactly") {
  dl::EarlyStopping stopping(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  feed(stopping, {kInf, 0.5, kNaN});
  const std::string state = stopping.save_state();
  CHECK(state.find('\n') == std::string::npos);
  CHECK(contains(state, "\"format_version\":1,"));
  dl::Json parsed;
  REQUIRE(dl::parse_json(state, parsed));
  dl::EarlyStopping resumed(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  resumed.restore_state(state);
  CHECK(resumed.save_state() == state);
  const auto history = resumed.result().score_per_epoch;
  REQUIRE(history.size() == 3);
  CHECK(history[0].second == kInf);
  CHECK(std::isnan(history[2].second));
}

TEST_CASE("EarlyStopping: a damaged or foreign state is refused") {
  dl::EarlyStoppingConfig config = config_for(dl::ScoreCalculator::kAccuracy);
  dl::EarlyStopping source(config, kRunEpochs);
  feed(source, {0.5, 0.6});
  const std::string state = source.save_state();

  dl::EarlyStopping target(config, kRunEpochs);
  CHECK_THROWS_AS(target.restore_state(""), dl::CheckpointError);
  CHECK_THROWS_AS(target.restore_state("garbage"), dl::CheckpointError);
  std::string other_version = state;
  other_version.replace(other_version.find("\"format_version\":1"), 18, "\"format_version\":9");
  CHECK_THROWS_WITH(target.restore_state(other_version), Contains("format version 9"));
  CHECK_THROWS_AS(target.restore_state("dl-early-stopping v1;calculator=accuracy"),
                  dl::CheckpointError);
  CHECK_THROWS_AS(target.restore_state(state.substr(0, state.size() / 2)), dl::CheckpointError);
  std::string bad_number = state;
  bad_number.replace(bad_number.find("\"best_epoch\":1"), 14, "\"best_epoch\":\"x\"");
  CHECK_THROWS_AS(target.restore_state(bad_number), dl::CheckpointError);
  CHECK(target.result().best_epoch == -1);  // a refused state changes nothing

  dl::EarlyStopping other_score(config_for(dl::ScoreCalculator::kTestLoss), kRunEpochs);
  CHECK_THROWS_AS(other_score.restore_state(state), dl::ConfigError);
}

TEST_CASE("EarlyStopping: the schema refuses the values early stopping cannot take") {
  // One set of range checks: the schema's (config_schema.cpp); EarlyStopping trusts its config.
  const std::string network =
      "inputType: {feedForward: {size: 4}}\nlayers: [{output: {nOut: 2}}]\n";
  for (const char* bad :
       {"earlyStopping: {patience: -1}", "earlyStopping: {evaluateEveryNEpochs: 0}",
        "earlyStopping: {minImprovement: -0.1}", "earlyStopping: {maxEpochs: -1}",
        "earlyStopping: {maxTimeSeconds: -1}", "epochs: 0"}) {
    INFO(bad);
    CHECK_THROWS_AS(dl::load_config_string(network + bad + "\n", "es.yaml"), dl::ConfigError);
  }
  const dl::Config good =
      dl::load_config_string(network + "earlyStopping: {enabled: true, maxEpochs: 7}\n", "es.yaml");
  CHECK(dl::epoch_limit(good) == 7);
  dl::Config off = good;
  off.earlyStopping.enabled = false;
  CHECK(dl::epoch_limit(off) == good.epochs);
}
