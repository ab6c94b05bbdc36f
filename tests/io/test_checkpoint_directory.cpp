#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "checkpoint_fixtures.hpp"
#include "core/error.hpp"
#include "io/checkpoint_directory.hpp"
#include "temp_directory.hpp"

namespace dl {
namespace {

using test::TempDirectory;

CheckpointState state_at(std::int64_t epoch, std::int64_t iteration) {
  CheckpointState s = test::sample_state();
  s.epoch = epoch;
  s.iteration = iteration;
  return s;
}

std::vector<std::string> file_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const std::string& p : paths) names.push_back(std::filesystem::path(p).filename().string());
  return names;
}

TEST_CASE("save names the file by epoch and iteration and creates the directory",
          "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.file("checkpoints"), 3);
  const std::string path = checkpoints.save(state_at(2, 1500));
  REQUIRE(path == dir.file("checkpoints/checkpoint-e2-i1500.dlck"));
  test::require_equal(read_checkpoint(path), state_at(2, 1500));
}

// The run directory removed while training: save used to make it again (create_directories) and
// the run went on to exit 0 with a directory lacking its marker, config and score log.
TEST_CASE("save refuses to make again a run directory that is gone", "[io][checkpoint_directory]") {
  TempDirectory dir;
  const std::string run = dir.file("run");
  std::filesystem::create_directory(run);
  CheckpointDirectory checkpoints(run + "/checkpoints", 3);
  checkpoints.save(state_at(0, 10));
  std::filesystem::remove_all(run);
  try {
    checkpoints.save(state_at(0, 20));
    FAIL("save made the removed run directory again");
  } catch (const IoError& e) {
    CHECK_THAT(e.what(), Catch::Contains(run + " is gone (removed or renamed while training)"));
  }
  CHECK_FALSE(std::filesystem::exists(run));
}

TEST_CASE("list sorts by iteration as a number and ignores other files",
          "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.path(), 10);
  checkpoints.save(state_at(1, 100));
  checkpoints.save(state_at(0, 9));
  checkpoints.save(state_at(0, 10));
  for (const char* other : {"notes.txt", "checkpoint-e0-i11.dlck.tmp-123", "checkpoint-ex-i12.dlck",
                            "checkpoint-e0-i.dlck", "model.dlck"}) {
    test::write_bytes(dir.file(other), "x");
  }
  REQUIRE(file_names(checkpoints.list()) == std::vector<std::string>{"checkpoint-e0-i9.dlck",
                                                                     "checkpoint-e0-i10.dlck",
                                                                     "checkpoint-e1-i100.dlck"});
}

TEST_CASE("list of a missing directory is empty", "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.file("never-created"), 2);
  REQUIRE(checkpoints.list().empty());
  std::vector<std::string> warnings;
  REQUIRE_FALSE(checkpoints.load_newest_valid(&warnings).has_value());
  REQUIRE(warnings.empty());
}

TEST_CASE("save keeps only the newest keep_last checkpoints", "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.path(), 2);
  for (std::int64_t i = 1; i <= 5; ++i) checkpoints.save(state_at(0, i * 10));
  REQUIRE(file_names(checkpoints.list()) ==
          std::vector<std::string>{"checkpoint-e0-i40.dlck", "checkpoint-e0-i50.dlck"});
  REQUIRE(dir.entries() ==
          std::vector<std::string>{"checkpoint-e0-i40.dlck", "checkpoint-e0-i50.dlck"});
}

TEST_CASE("save never deletes the checkpoint it just wrote", "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.path(), 1);
  checkpoints.save(state_at(0, 100));
  // A run resumed from an older checkpoint writes one with a smaller iteration.
  const std::string path = checkpoints.save(state_at(0, 50));
  REQUIRE(checkpoints.list() == std::vector<std::string>{path});
  test::require_equal(read_checkpoint(path), state_at(0, 50));
}

TEST_CASE("load_newest_valid skips damaged newer checkpoints and reports them",
          "[io][checkpoint_directory]") {
  TempDirectory dir;
  CheckpointDirectory checkpoints(dir.path(), 3);
  checkpoints.save(state_at(0, 10));
  const std::string middle = checkpoints.save(state_at(0, 20));
  const std::string newest = checkpoints.save(state_at(1, 30));

  std::vector<std::string> warnings;
  auto loaded = checkpoints.load_newest_valid(&warnings);
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->first == newest);
  REQUIRE(warnings.empty());

  std::string bytes = test::read_bytes(newest);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  test::write_bytes(newest, bytes);
  loaded = checkpoints.load_newest_valid(&warnings);
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->first == middle);
  test::require_equal(loaded->second, state_at(0, 20));
  REQUIRE(warnings.size() == 1);
  REQUIRE_THAT(warnings[0], Catch::Contains(newest) && Catch::Contains("checksum mismatch"));

  SECTION("all damaged: nothing, one warning each") {
    for (const std::string& path : checkpoints.list()) test::write_bytes(path, "DLTRAIN");
    warnings.clear();
    REQUIRE_FALSE(checkpoints.load_newest_valid(&warnings).has_value());
    REQUIRE(warnings.size() == 3);
  }
  // A model file renamed into the directory used to be taken and then refused for the config's
  // keys or the updater state, hiding the older checkpoints.
  SECTION("a model file is skipped, named as such") {
    CheckpointState model = state_at(2, 40);
    model.kind = kModelKind;
    const std::string model_path = dir.file("checkpoint-e2-i40.dlck");
    write_checkpoint(model_path, model);
    warnings.clear();
    loaded = checkpoints.load_newest_valid(&warnings);
    REQUIRE(loaded.has_value());
    REQUIRE(loaded->first == middle);
    REQUIRE(warnings.size() == 2);
    REQUIRE_THAT(warnings[0], Catch::Contains(model_path) &&
                                  Catch::Contains("is a model file, not a checkpoint"));
  }
  // A checkpoint renamed (or copied in) under a newer name than its contents: a resume went back
  // to the place it holds, and every later resume again, since save() never pruned it.
  SECTION("a checkpoint whose name is not its position is skipped, named as such") {
    const std::string renamed = dir.file("checkpoint-e9-i999.dlck");
    std::filesystem::rename(middle, renamed);
    warnings.clear();
    loaded = checkpoints.load_newest_valid(&warnings);
    REQUIRE(loaded.has_value());
    REQUIRE(loaded->first == dir.file("checkpoint-e0-i10.dlck"));
    REQUIRE(warnings.size() == 2);
    REQUIRE_THAT(warnings[0], Catch::Contains(renamed + ": its name says epoch index 9, iteration "
                                                        "999, but it holds epoch index 0, "
                                                        "iteration 20 (renamed or copied in?); "
                                                        "rename it to checkpoint-e0-i20.dlck"));
  }
  SECTION("warnings may be omitted") {
    REQUIRE(checkpoints.load_newest_valid(nullptr)->first == middle);
  }
}

}  // namespace
}  // namespace dl
