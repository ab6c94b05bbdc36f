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
  auto metrics = dl::make_metrics_jsonl(fixture.context());
  metrics->on_checkpoint_restore(checkpoint_at(2, 40), "ckpt");
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

TEST_CASE("a checkpoint's metadata that is no number is a checkpoint error, not an internal one",
          "[listeners]") {
  for (const char* bad : {"abc", "1e999", "-5", ""}) {
    RunFixture fixture;
    dl::CheckpointState state = fixture.state().capture(dl::kCheckpointKind, {0, 1, 1});
    state.metadata["train_seconds"] = bad;
    std::vector<std::string> log;
    CHECK_THROWS_WITH(fixture.state().restore(state, "c.dlck", log),
                      "c.dlck: metadata train_seconds is \"" + std::string(bad) +
                          "\", not a number of seconds >= 0; the file is damaged: resume from "
                          "an older checkpoint");
  }
}

// A run killed after its last checkpoint is resumed only to write its end, with no step left to
// report a score: its summary.json said final_score 0 where the uninterrupted run's was its
// last score. Checkpoints written before the key leave the score unknown (null), not 0.
TEST_CASE("the last score reported travels in the checkpoint, exactly, NaN included",
          "[listeners]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double score :
       {1.0 / 3.0, std::numeric_limits<double>::infinity(), std::copysign(nan, -1.0)}) {
    INFO(score);
    dl::CheckpointState state;
    {
      RunFixture saved;
      saved.progress().last_score = score;
      state = saved.state().capture(dl::kCheckpointKind, {1, 0, 4});
    }
    CHECK(state.metadata.at("last_score").find("-nan") == std::string::npos);
    RunFixture resumed;
    std::vector<std::string> log;
    resumed.state().restore(state, "c.dlck", log);
    REQUIRE(resumed.progress().last_score.has_value());
    if (std::isnan(score)) {
      CHECK(std::isnan(*resumed.progress().last_score));
    } else {
      CHECK(*resumed.progress().last_score == score);
    }
  }
  RunFixture fresh;
  CHECK(fresh.state().capture(dl::kCheckpointKind, {0, 1, 1}).metadata.count("last_score") == 0);
  dl::CheckpointState older = fresh.state().capture(dl::kCheckpointKind, {0, 1, 1});
  RunFixture resumed;
  resumed.progress().last_score = 0.5;
  std::vector<std::string> log;
  resumed.state().restore(older, "c.dlck", log);
  CHECK_FALSE(resumed.progress().last_score.has_value());
  older.metadata["last_score"] = "0.5x";
  CHECK_THROWS_WITH(resumed.state().restore(older, "c.dlck", log),
                    "c.dlck: metadata last_score is \"0.5x\", not a score; the file is damaged: "
                    "resume from an older checkpoint");
}

// A checkpoint's checksums hold whatever its metadata says: sums that count below 0 or more
// correct than counted made the resumed epoch's train_accuracy up, and a job of "-3 ranks x 1
// worker" was resumed as another layout.
TEST_CASE("a checkpoint's epoch sums and job layout out of range are checkpoint errors",
          "[listeners]") {
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"epoch_train_sums", "1 2 -7"},
      {"epoch_train_sums", "1 9 5"},
      {"epoch_train_sums", "1 2 3 4"},
      {"epoch_train_sums", "1 2"},
      {"epoch_train_sums", "x 2 3"},
      {"epoch_train_sums", "1 2 5x"},
      {"epoch_train_sums", "1 nan 5"},
      {"resume_key.parallel.ranks", "-3"},
      {"resume_key.parallel.workers", "0"},
  };
  for (const auto& [key, value] : damaged) {
    INFO(key << ": " << value);
    RunFixture fixture;
    dl::CheckpointState state = fixture.state().capture(dl::kCheckpointKind, {0, 1, 1});
    state.metadata[key] = value;
    std::vector<std::string> log;
    CHECK_THROWS_WITH(fixture.state().restore(state, "c.dlck", log),
                      Catch::StartsWith("c.dlck: metadata ") &&
                          Catch::EndsWith("the file is damaged: resume from an older checkpoint"));
  }
  RunFixture fixture;
  dl::CheckpointState state = fixture.state().capture(dl::kCheckpointKind, {0, 1, 1});
  state.metadata["epoch_train_sums"] = "0.5 3 10";
  std::vector<std::string> log;
  CHECK(fixture.state().restore(state, "c.dlck", log).iteration == 1);
  CHECK(fixture.progress().epoch_samples == 10);
}

// With onNonFiniteLoss: skip a NaN batch loss still counts in the epoch's loss sum; a checkpoint
// inside that epoch (a signal's) held "-nan 54 480", which the resume refused as damaged.
TEST_CASE("a checkpoint inside an epoch whose loss sum is NaN resumes", "[listeners]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  RunFixture saved;
  saved.progress().epoch_loss = std::copysign(nan, -1.0);
  saved.progress().epoch_correct = 54;
  saved.progress().epoch_samples = 480;
  dl::CheckpointState state = saved.state().capture(dl::kCheckpointKind, {0, 1, 1});
  CHECK(state.metadata.at("epoch_train_sums") == "nan 54 480");
  for (const char* sums : {"nan 54 480", "-nan 54 480", "inf 54 480"}) {  // "-nan": older files
    INFO(sums);
    state.metadata["epoch_train_sums"] = sums;
    RunFixture resumed;
    std::vector<std::string> log;
    resumed.state().restore(state, "c.dlck", log);
    CHECK(!std::isfinite(resumed.progress().epoch_loss));
    CHECK(resumed.progress().epoch_correct == 54);
    CHECK(resumed.progress().epoch_samples == 480);
  }
}

TEST_CASE(
    "a resume under another batch size or seed is refused naming the keys, unless "
    "--restart-epoch",
    "[listeners]") {
  dl::CheckpointState state;
  {
    RunFixture saved;
    state = saved.state().capture(dl::kCheckpointKind, {1, 2, 6});
  }
  RunFixture changed({"batchSize=8", "seed=5"});
  std::vector<std::string> log;
  CHECK_THROWS_WITH(changed.state().restore(state, "c.dlck", log),
                    Catch::StartsWith("c.dlck: the config differs from the run's in what decides "
                                      "the data order or the model (batchSize: 4 -> 8; seed: ") &&
                        Catch::Contains("--restart-epoch"));
  changed.state().allow_changed_data_order(true);
  const dl::RunPosition position = changed.state().restore(state, "c.dlck", log);
  CHECK(position.epoch == 1);
  CHECK(position.round == 0);
  CHECK(position.iteration == 6);
  RunFixture same;
  CHECK(same.state().restore(state, "c.dlck", log).round == 2);
}

TEST_CASE(
    "checkpoints record deterministic and the convolution algorithms; a resume notes a change",
    "[listeners]") {
  dl::CheckpointState state;
  {
    RunFixture saved;
    state = saved.state().capture(dl::kCheckpointKind, {1, 2, 6});
  }
  CHECK(state.metadata.at("deterministic") == "true");
  // The CPU backend chooses no algorithms, so it records none.
  CHECK(state.metadata.count("convolution_algorithms") == 0);
  std::vector<std::string> log;
  RunFixture same;
  same.state().restore(state, "c.dlck", log);
  for (const std::string& line : log) CHECK_THAT(line, !Contains("deterministic"));

  state.metadata["convolution_algorithms"] = "conv2d 4x1x5x5 -> 2x3x3, kernel 3x3: forward GEMM";
  RunFixture changed({"deterministic=false"});
  log.clear();
  changed.state().restore(state, "c.dlck", log);
  const auto has = [&](const std::string& text) {
    return std::any_of(log.begin(), log.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  CHECK(has("resume: note: deterministic: true -> false"));
  CHECK(
      has("resume: note: the convolution algorithms differ from the checkpoint's: conv2d "
          "4x1x5x5 -> 2x3x3, kernel 3x3: forward GEMM -> (none)"));
}
