// Each listener's resume behaviour: what it cuts back, restores or writes again when a run
// resumes from a checkpoint, so the run directory reads as one uninterrupted run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "io/checkpoint_directory.hpp"
#include "train/listeners/listeners.hpp"
#include "train/run_fixture.hpp"
#include "train/training_state.hpp"

using Catch::Matchers::Contains;
using dl::test::kClasses;
using dl::test::RunFixture;

namespace {

dl::CheckpointState checkpoint_at(int epoch, std::int64_t iteration) {
  dl::CheckpointState state;
  state.epoch = epoch;
  state.iteration = iteration;
  return state;
}

dl::SyncPoint sync_point(std::int64_t iteration) {
  dl::SyncPoint point;
  point.epoch = 1;
  point.round = iteration % 4;
  point.rounds = 4;
  point.iteration = iteration;
  point.loss_sum = {2.0};
  point.samples = {4};
  point.learning_rate = 0.1;
  return point;
}

// An epoch end whose monitored score (test loss) is `loss`.
void end_epoch(dl::TrainingListener& listener, int epoch, double loss, bool* stop = nullptr) {
  dl::EvaluationResult result(kClasses);
  result.mean_loss = loss;
  dl::EpochEnd event;
  event.epoch = epoch;
  event.test = &result;
  listener.on_epoch_end(event);
  if (stop != nullptr) *stop = event.stop;
}

}  // namespace

namespace {

struct CsvLogKind {
  std::unique_ptr<dl::TrainingListener> (*make)(const dl::ListenerContext&);
  const char* name;
  const char* header;
  const char* row;  // the fields after "epoch,iteration,"
};

const CsvLogKind kCsvLogs[] = {{dl::make_scores_csv, "scores.csv",
                                "epoch,iteration,worker,score,learning_rate", "all,0.5,0.1"},
                               {dl::make_timing_csv, "timing.csv",
                                "epoch,iteration,images_per_second,elapsed_seconds", "100,0.5"}};

// The rows "1,<iteration>,<the log's other fields>" of `iterations`, each with its line end.
std::string csv_rows(const CsvLogKind& log, std::initializer_list<int> iterations) {
  std::string rows;
  for (const int i : iterations) rows += fmt::format("1,{},{}\n", i, log.row);
  return rows;
}

// Restores `log` from the checkpoint of iteration 4 over `before` (none: no file), starts it and
// appends the row of iteration 5; returns the file and what was said on standard error.
std::pair<std::string, std::string> resume_csv_log(const CsvLogKind& log,
                                                   const std::optional<std::string>& before) {
  RunFixture fixture;
  if (before) dl::test::write_bytes(fixture.file(log.name), *before);
  auto listener = log.make(fixture.context());
  std::ostringstream errors;
  std::streambuf* const standard_error = std::cerr.rdbuf(errors.rdbuf());
  listener->on_checkpoint_restore(checkpoint_at(1, 4), "ckpt");
  std::cerr.rdbuf(standard_error);
  listener->on_start(dl::RunInfo{});
  const dl::SyncPoint point = sync_point(5);
  dl::SyncEvent event(point);
  event.report = true;
  event.scores = {dl::ScoreRow{-1, 0.25}};
  listener->on_sync_point(event);
  return {dl::test::read_bytes(fixture.file(log.name)), errors.str()};
}

}  // namespace

TEST_CASE("scores.csv and timing.csv: a resume keeps the rows up to the checkpoint, then appends",
          "[listeners]") {
  for (const CsvLogKind& log : kCsvLogs) {
    INFO(log.name);
    // Rows of iterations 2, 4 and 6, then a row cut short by a crash.
    const auto [text, errors] =
        resume_csv_log(log, std::string(log.header) + "\n" + csv_rows(log, {2, 4, 6}) + "1,");
    const std::string kept = std::string(log.header) + "\n" + csv_rows(log, {2, 4});
    CHECK(text.rfind(kept, 0) == 0);
    CHECK(text.size() > kept.size());
    CHECK(text.find("1,5,") == kept.size());
    CHECK(text.find("1,6,") == std::string::npos);
    CHECK(errors.empty());
  }
}

TEST_CASE(
    "scores.csv and timing.csv: a log damaged before the checkpoint is resumed with its "
    "header and whole rows, saying what was lost",
    "[listeners]") {
  for (const CsvLogKind& log : kCsvLogs) {
    INFO(log.name);
    const std::string header = std::string(log.header) + "\n";
    // Emptied, or removed: the resumed log has its header (it had none) and says so.
    for (const auto& [before, said] :
         {std::pair{std::optional<std::string>(""), "its header was missing"},
          std::pair{std::optional<std::string>(), "missing"}}) {
      const auto [text, errors] = resume_csv_log(log, before);
      CHECK(text.rfind(header + "1,5,", 0) == 0);
      CHECK_THAT(errors, Catch::Contains(fmt::format(
                             "{}: {}; written again with its header, but rows lost up to the "
                             "checkpoint's iteration 4 are not written again",
                             log.name, said)));
    }
    // A row of iteration 3 cut short (a wrong field count) and a line edited into no row: both
    // dropped, the first named. They used to stay, and a header lost stayed lost.
    const std::string cut = fmt::format("1,3,{}", std::string(log.row).substr(0, 3));
    const auto [text, errors] = resume_csv_log(
        log, header + csv_rows(log, {2}) + cut + "\n" + "1,x,y\n" + csv_rows(log, {4}));
    CHECK(text.rfind(header + csv_rows(log, {2, 4}) + "1,5,", 0) == 0);
    CHECK_THAT(errors,
               Catch::Contains(fmt::format(
                   "{}: 2 damaged row(s) dropped (line 3: '{}'); written again", log.name, cut)));
  }
}

TEST_CASE(
    "scores.csv and timing.csv: rows cut off before the checkpoint after it was written are "
    "named on resume",
    "[listeners]") {
  for (const CsvLogKind& log : kCsvLogs) {
    INFO(log.name);
    RunFixture fixture;
    dl::CheckpointState saved = checkpoint_at(1, 5);
    {
      auto writer = log.make(fixture.context());
      writer->on_start(dl::RunInfo{});
      for (const std::int64_t iteration : {2, 4}) {
        const dl::SyncPoint point = sync_point(iteration);
        dl::SyncEvent event(point);
        event.report = true;
        event.scores = {dl::ScoreRow{-1, 0.25}};
        writer->on_sync_point(event);
      }
      writer->on_checkpoint_save(saved);
    }
    const std::string whole = dl::test::read_bytes(fixture.file(log.name));
    for (const bool cut : {false, true}) {
      INFO("cut " << cut);
      // Cut by hand to its header and first row, as an edit or a copy taken mid-write leaves it.
      dl::test::write_bytes(fixture.file(log.name),
                            cut ? whole.substr(0, whole.find("\n1,4,") + 1) : whole);
      auto resumed = log.make(fixture.context());
      std::ostringstream errors;
      std::streambuf* const standard_error = std::cerr.rdbuf(errors.rdbuf());
      resumed->on_checkpoint_restore(saved, "ckpt");
      std::cerr.rdbuf(standard_error);
      if (cut)
        CHECK_THAT(errors.str(),
                   Contains(fmt::format("{}: its rows end at iteration 2, but it held rows up to "
                                        "iteration 4 when the checkpoint was written",
                                        log.name)));
      else
        CHECK(errors.str().empty());
    }
  }
}

TEST_CASE("scores.csv: a fresh run replaces an old file with its header", "[listeners]") {
  RunFixture fixture;
  dl::test::write_bytes(fixture.file("scores.csv"), "stale\n0,1,all,9,9\n");
  auto scores = dl::make_scores_csv(fixture.context());
  scores->on_start(dl::RunInfo{});
  CHECK(dl::test::read_bytes(fixture.file("scores.csv")) ==
        "epoch,iteration,worker,score,learning_rate\n");
}

TEST_CASE("metrics.jsonl: a resume keeps the epochs before the checkpoint's", "[listeners]") {
  RunFixture fixture;
  dl::test::write_bytes(fixture.file("metrics.jsonl"),
                        "{\"epoch\":0,\"test_loss\":1.0}\n{\"epoch\":1,\"test_loss\":0.9}\n"
                        "{\"epoch\":2,\"test_loss\":0.8}\n{\"epoch\":3,\"test_l");
  const std::string before = dl::test::read_bytes(fixture.file("metrics.jsonl"));
  auto metrics = dl::make_metrics_jsonl(fixture.context());
  metrics->on_checkpoint_restore(checkpoint_at(2, 40), "ckpt");
  // Cut when training goes on, not before: a resume of a run that has ended trains nothing and
  // must leave the file whole (its test set's "final" record was dropped).
  CHECK(dl::test::read_bytes(fixture.file("metrics.jsonl")) == before);
  metrics->on_start(dl::RunInfo{});
  CHECK(dl::test::read_bytes(fixture.file("metrics.jsonl")) ==
        "{\"epoch\":0,\"test_loss\":1.0}\n{\"epoch\":1,\"test_loss\":0.9}\n");
}

TEST_CASE("early stopping: its state travels in the checkpoint", "[listeners]") {
  RunFixture fixture({"earlyStopping.enabled=true", "earlyStopping.patience=2",
                      "earlyStopping.minImprovement=0.1", "earlyStopping.saveBestModel=false"});
  auto uninterrupted = dl::make_early_stopping_json(fixture.context());
  REQUIRE(uninterrupted != nullptr);
  end_epoch(*uninterrupted, 0, 1.0);
  end_epoch(*uninterrupted, 1, 0.95);  // no gain beyond 0.1: one evaluation without
  dl::CheckpointState saved = checkpoint_at(2, 8);
  uninterrupted->on_checkpoint_save(saved);
  REQUIRE(saved.metadata.count("early_stopping_state") == 1);

  auto resumed = dl::make_early_stopping_json(fixture.context());
  resumed->on_checkpoint_restore(saved, "ckpt");
  bool stop_resumed = false, stop_uninterrupted = false;
  end_epoch(*resumed, 2, 0.93, &stop_resumed);  // the second: patience 2 ends the run
  end_epoch(*uninterrupted, 2, 0.93, &stop_uninterrupted);
  CHECK(stop_resumed);
  CHECK(stop_uninterrupted);

  // Without the restored state the count starts again and the run goes on.
  auto fresh = dl::make_early_stopping_json(fixture.context());
  bool stop_fresh = true;
  end_epoch(*fresh, 2, 0.93, &stop_fresh);
  CHECK_FALSE(stop_fresh);

  // The result reaches the summary and the console through the run's end.
  dl::RunEnd end;
  resumed->on_finish(end);
  REQUIRE(end.early_stopping);
  CHECK(end.early_stopping->reason == dl::TerminationReason::kPatience);
  CHECK(end.early_stopping->best_epoch == 2);  // the lowest loss, if not by more than 0.1
  CHECK(dl::test::read_bytes(fixture.file("early_stopping.json")).find("patience") !=
        std::string::npos);
}

TEST_CASE("early stopping: a state saved for another score is refused", "[listeners]") {
  RunFixture accuracy({"earlyStopping.enabled=true", "earlyStopping.scoreCalculator=accuracy"});
  auto source = dl::make_early_stopping_json(accuracy.context());
  dl::CheckpointState saved = checkpoint_at(1, 4);
  source->on_checkpoint_save(saved);
  RunFixture loss({"earlyStopping.enabled=true", "earlyStopping.scoreCalculator=testLoss"});
  auto target = dl::make_early_stopping_json(loss.context());
  CHECK_THROWS_AS(target->on_checkpoint_restore(saved, "ckpt"), dl::ConfigError);
  CHECK(dl::make_early_stopping_json(RunFixture().context()) == nullptr);  // off: no listener
}

TEST_CASE("early stopping: a damaged state is refused naming the checkpoint", "[listeners]") {
  RunFixture fixture({"earlyStopping.enabled=true"});
  auto listener = dl::make_early_stopping_json(fixture.context());
  dl::CheckpointState saved = checkpoint_at(1, 4);
  saved.metadata["early_stopping_state"] = "[]";
  CHECK_THROWS_WITH(listener->on_checkpoint_restore(saved, "runs/a/checkpoint-e1-i4.dlck"),
                    Catch::StartsWith("runs/a/checkpoint-e1-i4.dlck: checkpoint metadata: "
                                      "early-stopping state is not a JSON object"));
}

TEST_CASE("checkpoints: after a resume, periodic checkpoints fall where an uninterrupted run's do",
          "[listeners]") {
  RunFixture fixture({"output.checkpointEveryIterations=4"});
  auto checkpoints = dl::make_checkpoints(fixture.context());
  checkpoints->on_checkpoint_restore(checkpoint_at(1, 6), "ckpt");
  for (std::int64_t iteration : {7, 8}) {
    const dl::SyncPoint point = sync_point(iteration);
    dl::SyncEvent event(point);
    checkpoints->on_sync_point(event);
    INFO(iteration);
    // Iteration 7 is in the same block of 4 as the checkpoint resumed from; 8 starts the next.
    CHECK(event.saved.size() == (iteration == 8 ? 1u : 0u));
  }
  const dl::SyncPoint point = sync_point(9);
  dl::SyncEvent stopped(point);
  stopped.stop_signal = 15;
  checkpoints->on_sync_point(stopped);
  REQUIRE(stopped.saved.size() == 1);
  CHECK(stopped.saved[0].reason == dl::SaveReason::kStopSignal);
  CHECK_THAT(stopped.saved[0].path, Contains("checkpoint-e1-i9"));
  const dl::CheckpointState written = dl::read_checkpoint(stopped.saved[0].path);
  CHECK(written.round_in_epoch == point.round + 1);  // resumes with the next round
}
