// What a checkpoint's metadata carries for the run's state (TrainingState): the last score, the
// epoch's sums, the job's layout, the config keys that decide the data order, the algorithms; and
// how damaged or foreign values are refused. Split from test_listeners.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "train/run_fixture.hpp"
#include "train/training_state.hpp"

using Catch::Matchers::Contains;
using dl::test::RunFixture;

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
