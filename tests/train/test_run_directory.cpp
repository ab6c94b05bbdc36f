#include "train/run_directory.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

void touch(const fs::path& p) {
  std::ofstream(p) << "partial";
}

// The id of a process that has exited and been reaped: no process has it now (barring reuse
// within microseconds).
pid_t dead_process_id() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("stale temporary files of a killed writer are removed, live and other files kept") {
  const fs::path dir = fresh_directory("dl-run-directory-test");
  dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kRefuse);
  fs::create_directories(run.checkpoints());
  const std::string dead = std::to_string(dead_process_id());
  const std::string mine = std::to_string(getpid());
  const std::string parent = std::to_string(getppid());
  touch(dir / ("model.dlm.tmp-" + dead));
  touch(fs::path(run.checkpoints()) / ("checkpoint-e1-i9.dlck.tmp-" + dead));
  touch(fs::path(run.checkpoints()) / ("checkpoint-e1-i8.dlck.tmp-" + mine));
  touch(dir / ("scores.csv.tmp-" + parent));
  touch(dir / "notes.tmp-abc");
  touch(dir / "scores.csv");

  CHECK(run.remove_stale_temporary_files() == 2);
  CHECK_FALSE(fs::exists(dir / ("model.dlm.tmp-" + dead)));
  CHECK_FALSE(fs::exists(fs::path(run.checkpoints()) / ("checkpoint-e1-i9.dlck.tmp-" + dead)));
  CHECK(fs::exists(fs::path(run.checkpoints()) / ("checkpoint-e1-i8.dlck.tmp-" + mine)));
  CHECK(fs::exists(dir / ("scores.csv.tmp-" + parent)));
  CHECK(fs::exists(dir / "notes.tmp-abc"));
  CHECK(fs::exists(dir / "scores.csv"));
  CHECK(run.remove_stale_temporary_files() == 0);
  fs::remove_all(dir);
}

TEST_CASE("a run directory without a checkpoints folder has nothing to clean") {
  const fs::path dir = fresh_directory("dl-run-directory-empty");
  dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kRefuse);
  CHECK(run.remove_stale_temporary_files() == 0);
  fs::remove_all(dir);
}
