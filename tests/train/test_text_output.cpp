// What the text outputs write for a figure that is NaN (a diverged loss) or was never measured:
// every place goes through one formatter (core/figure_text.hpp), so none prints "-nan", and
// summary.json says null for what the run did not measure.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/figure_text.hpp"
#include "io/json_writer.hpp"
#include "io/temp_directory.hpp"
#include "train/early_stopping.hpp"
#include "train/evaluator.hpp"
#include "train/listeners/listeners.hpp"
#include "train/listeners/progress_bar.hpp"
#include "train/run_fixture.hpp"

using Catch::Matchers::Contains;
using dl::figure;
using dl::test::kClasses;
using dl::test::RunFixture;

namespace {

// The NaN an x86 computation yields (0/0, inf - inf) has its sign bit set: fmt and printf print
// it "-nan".
const double kNegativeNaN = std::copysign(std::numeric_limits<double>::quiet_NaN(), -1.0);
constexpr double kInf = std::numeric_limits<double>::infinity();

bool has_negative_nan(const std::string& text) {
  return text.find("-nan") != std::string::npos;
}

dl::Json read_json(const std::string& path) {
  dl::Json json;
  REQUIRE(dl::parse_json(dl::test::read_bytes(path), json));
  return json;
}

}  // namespace

TEST_CASE("figure: a NaN prints nan whatever its sign bit; every other number as before",
          "[text]") {
  REQUIRE(std::signbit(kNegativeNaN));
  REQUIRE(fmt::format("{:.4f}", kNegativeNaN) == "-nan");  // what fmt alone prints
  CHECK(fmt::format("{:.4f}", figure(kNegativeNaN)) == "nan");
  CHECK(fmt::format("{:.9g}", figure(kNegativeNaN)) == "nan");
  CHECK(fmt::format("{}", figure(kNegativeNaN)) == "nan");
  CHECK(fmt::format("{:>6.2f}|", figure(kNegativeNaN)) == "   nan|");
  CHECK(fmt::format("{:.4f} {:.4f}", figure(kInf), figure(-kInf)) == "inf -inf");
  for (const double value : {0.0, -0.0, 0.1, -2.5, 1.0 / 3.0, 1e-30, 123456.789}) {
    INFO(value);
    for (const char* spec : {"{:.4f}", "{:.6f}", "{:.9g}", "{:.17g}", "{}"})
      CHECK(fmt::format(fmt::runtime(spec), figure(value)) ==
            fmt::format(fmt::runtime(spec), value));
  }
}

// Early stopping's details read "minibatch score -nan", and a saved history holding such a NaN was
// refused on resume as a damaged state (its reader takes "nan", "inf" and "-inf").
TEST_CASE("early stopping writes a NaN as nan in its details, summary and saved state", "[text]") {
  dl::EarlyStoppingConfig config;
  config.enabled = true;
  config.scoreCalculator = dl::ScoreCalculator::kTestLoss;
  constexpr int kEpochs = 10;
  dl::EarlyStopping stopping(config, kEpochs);
  CHECK(stopping.on_iteration(7, kNegativeNaN, 0.0));
  CHECK(stopping.result().details == "minibatch score nan at iteration 7");

  dl::EarlyStopping at_epoch(config, kEpochs);
  at_epoch.on_epoch_end(0, 0.5);
  at_epoch.on_epoch_end(1, kNegativeNaN);
  CHECK(at_epoch.result().details == "evaluation score nan at epoch 2 (best 0.5000 at epoch 1)");
  CHECK_THAT(at_epoch.result().summary(), Contains("      2  nan\n"));
  const std::string state = at_epoch.save_state();
  CHECK_THAT(state, Contains("\"nan\""));
  CHECK_FALSE(has_negative_nan(state));
  dl::EarlyStopping resumed(config, kEpochs);
  resumed.restore_state(state);
  REQUIRE(resumed.result().score_per_epoch.size() == 2);
  CHECK(std::isnan(resumed.result().score_per_epoch[1].second));
}

TEST_CASE("the progress bar and scores.csv write a NaN loss as nan", "[text]") {
  dl::ProgressLine line;
  line.done = 3;
  line.total = 10;
  line.loss = kNegativeNaN;
  CHECK_THAT(dl::format_progress_line(line), Contains(" - loss nan - "));

  RunFixture fixture;
  auto scores = dl::make_scores_csv(fixture.context());
  scores->on_start(dl::RunInfo{});
  dl::SyncPoint point;
  point.iteration = 3;
  point.learning_rate = 0.5;
  dl::SyncEvent event(point);
  event.report = true;
  event.scores = {dl::ScoreRow{-1, kNegativeNaN}, dl::ScoreRow{1, -kInf}};
  scores->on_sync_point(event);
  CHECK(dl::test::read_bytes(fixture.file("scores.csv")) ==
        "epoch,iteration,worker,score,learning_rate\n0,3,all,nan,0.5\n0,3,1,-inf,0.5\n");
}

TEST_CASE("the console writes NaN figures as nan and no test accuracy the run did not measure",
          "[text]") {
  RunFixture fixture({"output.console=lines"});
  auto console = dl::make_console_log(fixture.context());
  dl::RunInfo info;
  info.max_epochs = 10;
  console->on_start(info);
  dl::SyncPoint point;
  point.rounds = 4;
  point.iteration = 1;
  dl::SyncEvent sync(point);
  sync.report = true;
  sync.score = kNegativeNaN;
  console->on_sync_point(sync);
  dl::EvaluationResult test(kClasses);
  test.mean_loss = kNegativeNaN;
  dl::EpochEnd epoch;
  epoch.train_loss = kNegativeNaN;
  epoch.test = &test;
  console->on_epoch_end(epoch);
  dl::RunEnd end;
  end.test = &test;  // the final model's evaluation
  end.outcome.test_accuracy = 0.0;
  end.outcome.epochs_completed = 1;
  console->on_finish(end);
  const std::string text = fixture.console_text();
  CHECK_THAT(text, Contains("score nan, lr"));
  CHECK_THAT(text, Contains("train loss nan - accuracy"));
  CHECK_THAT(text, Contains(", loss nan\n"));
  CHECK_THAT(text, Contains("test set (final model): accuracy 0.0000, loss nan\n"));
  CHECK_THAT(text,
             Contains("done: 1 epoch(s), 0 iterations, 0.0s, 0 images/s, test accuracy 0.0000"));
  CHECK_FALSE(has_negative_nan(text));

  // Diverged after two epochs that evaluated a validation set, the run measured no test
  // accuracy (a diverged model is not evaluated): its last line names none, where it said
  // "test accuracy 0.0000".
  RunFixture diverged({"output.console=epochs"});
  console = dl::make_console_log(diverged.context());
  console->on_start(info);
  dl::RunEnd failed;
  failed.diverged = true;
  failed.outcome.epochs_completed = 2;
  console->on_finish(failed);
  CHECK_THAT(diverged.console_text(), Contains("diverged: 2 epoch(s), 0 iterations"));
  CHECK_THAT(diverged.console_text(), !Contains("test accuracy"));
}

TEST_CASE("summary.json: test_accuracy and final_score are null when the run measured neither",
          "[text]") {
  RunFixture fixture;
  auto summary = dl::make_summary_json(fixture.context());
  summary->on_start(dl::RunInfo{});
  dl::RunEnd end;
  end.stopped_by = "signal 15";
  summary->on_finish(end);
  dl::Json json = read_json(fixture.file("summary.json"));
  CHECK(json.at("test_accuracy").is_null());
  CHECK(json.at("final_score").is_null());

  end.outcome.test_accuracy = 0.0;  // measured, and 0: a number
  end.outcome.final_score = 0.25;
  summary->on_finish(end);
  json = read_json(fixture.file("summary.json"));
  CHECK(json.at("test_accuracy") == 0.0);
  CHECK(json.at("final_score") == 0.25);
}
