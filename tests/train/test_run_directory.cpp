#include "train/run_directory.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

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
  // A dead writer's temporary file of a name dl-train does not write is someone else's file.
  touch(dir / ("notes.tmp-" + dead));
  touch(fs::path(run.checkpoints()) / ("mine.dlck.tmp-" + dead));
  touch(dir / (std::string(dl::RunDirectory::kClaimName) + ".stale.tmp-" + dead));

  CHECK(run.remove_stale_temporary_files() == 3);
  CHECK(fs::exists(dir / ("notes.tmp-" + dead)));
  CHECK(fs::exists(fs::path(run.checkpoints()) / ("mine.dlck.tmp-" + dead)));
  CHECK_FALSE(fs::exists(dir / (std::string(dl::RunDirectory::kClaimName) + ".stale.tmp-" + dead)));
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

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("a run directory is locked while it is held; the second claim names the holder") {
  const fs::path dir = fresh_directory("dl-run-directory-lock");
  {
    dl::RunDirectory first(dir.string(), dl::RunDirectory::Existing::kRefuse);
    CHECK(fs::exists(dir / dl::RunDirectory::kMarkerName));
    const std::string holder = "pid " + std::to_string(getpid()) + " on host ";
    CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kResume),
                      Catch::Contains("another dl-train is using this run directory (" + holder));
    CHECK_THROWS_AS(dl::RunDirectory::check(dir.string(), dl::RunDirectory::Existing::kResume),
                    dl::IoError);
  }
  // Released with its holder: the next claim of the (still empty) run succeeds.
  dl::RunDirectory::check(dir.string(), dl::RunDirectory::Existing::kRefuse);
  dl::RunDirectory again(dir.string(), dl::RunDirectory::Existing::kRefuse);
  fs::remove_all(dir);
}

TEST_CASE("check() touches nothing; a directory that does not exist passes") {
  const fs::path dir = fresh_directory("dl-run-directory-check");
  dl::RunDirectory::check(dir.string(), dl::RunDirectory::Existing::kOverwrite);
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("an output directory that cannot be made is refused by check(), naming the part") {
  const fs::path dir = fresh_directory("dl-run-directory-unmakeable");
  fs::create_directories(dir);
  touch(dir / "file");
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  const auto refusal = [](const fs::path& path) -> std::string {
    try {
      dl::RunDirectory::check(path.string(), dl::RunDirectory::Existing::kRefuse);
    } catch (const dl::IoError& e) {
      return e.what();
    }
    return "";
  };
  // Creating it used to fail after the data was read, with "cannot create the output directory
  // (File exists)" for the link.
  CHECK(refusal(dir / "dangling") ==
        fmt::format("{}: the output directory is a symbolic link to {}, which does not exist; "
                    "create that directory, or set output.directory elsewhere",
                    (dir / "dangling").string(), (dir / "nowhere").string()));
  CHECK_THAT(refusal(dir / "dangling" / "run"),
             Catch::Matchers::StartsWith(fmt::format("{}: {} is a symbolic link to ",
                                                     (dir / "dangling" / "run").string(),
                                                     (dir / "dangling").string())));
  CHECK(refusal(dir / "file" / "run") ==
        fmt::format("{}: {} is a file, not a directory; set output.directory to a directory",
                    (dir / "file" / "run").string(), (dir / "file").string()));
  CHECK_THAT(refusal(dir / "file"), Catch::Matchers::Contains("the output directory is a file"));
  CHECK_THROWS_AS(
      dl::RunDirectory((dir / "dangling").string(), dl::RunDirectory::Existing::kRefuse),
      dl::IoError);
  CHECK_FALSE(fs::exists(dir / "nowhere"));
  if (geteuid() != 0) {  // root writes anywhere
    fs::create_directories(dir / "read-only");
    fs::permissions(dir / "read-only", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THAT(refusal(dir / "read-only" / "run"),
               Catch::Matchers::Contains("cannot create the output directory ("));
  }
  CHECK(refusal(dir / "new" / "run").empty());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  fs::remove_all(dir);
}

TEST_CASE("a directory whose paths would pass PATH_MAX or NAME_MAX is refused, nothing made") {
  const fs::path dir = fresh_directory("dl-run-directory-long");
  const auto refusal = [](const std::string& path) -> std::string {
    try {
      dl::RunDirectory::check(path, dl::RunDirectory::Existing::kRefuse);
    } catch (const dl::IoError& e) {
      return e.what();
    }
    return "";
  };
  // Relative paths count as given: the system limits the path dl-train passes, not the absolute.
  const std::string name(200, 'd');
  std::string deep = dir.string();
  while (deep.size() < PATH_MAX - 100) deep += "/" + name;
  CHECK_THAT(refusal(deep), Catch::Matchers::Contains("over the system's limit of 4095 bytes "
                                                      "(PATH_MAX); set output.directory to a path "
                                                      "of at most"));
  // Short enough for the longest checkpoint name: accepted.
  CHECK(refusal(deep.substr(0, PATH_MAX - 200)).empty());
  const auto names =
      static_cast<std::size_t>(pathconf(fs::temp_directory_path().c_str(), _PC_NAME_MAX));
  CHECK_THAT(refusal((dir / std::string(names + 1, 'n') / "run").string()),
             Catch::Matchers::Contains(fmt::format("is {} bytes long, over the file system's limit "
                                                   "of {} bytes for a name (NAME_MAX)",
                                                   names + 1, names)));
  CHECK(refusal((dir / std::string(names, 'n') / "run").string()).empty());
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("--overwrite refuses a directory without the marker and deletes nothing there") {
  const fs::path dir = fresh_directory("dl-run-directory-foreign");
  fs::create_directories(dir / "checkpoints");
  touch(dir / "notes.txt");
  touch(dir / "scores.csv");
  touch(dir / "checkpoints" / "checkpoint-e0-i5.dlck");
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kOverwrite),
                    Catch::Contains("--overwrite refused, nothing deleted: it has no dl-train "
                                    "marker (.dl-train-run), so its files (notes.txt) may not be "
                                    "dl-train's"));
  // Pointing at --resume or --overwrite, which refuse it too, would be no fix.
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kRefuse),
                    Catch::EndsWith("holds files that are not a dl-train run (notes.txt); set "
                                    "output.directory to a new or empty directory"));
  CHECK(fs::exists(dir / "notes.txt"));
  CHECK(fs::exists(dir / "scores.csv"));
  CHECK(fs::exists(dir / "checkpoints" / "checkpoint-e0-i5.dlck"));
  CHECK_FALSE(fs::exists(dir / dl::RunDirectory::kMarkerName));
  fs::remove_all(dir);
}

TEST_CASE("--resume refuses a directory without the marker and writes nothing there") {
  const fs::path dir = fresh_directory("dl-run-directory-resume-foreign");
  fs::create_directories(dir);
  std::ofstream(dir / "scores.csv") << "mine";
  touch(dir / "notes.txt");
  const auto resume = dl::RunDirectory::Existing::kResume;
  CHECK_THROWS_WITH(dl::RunDirectory::check(dir.string(), resume),
                    Catch::Contains("--resume refused, nothing written: the directory holds "
                                    "files (notes.txt) but no dl-train marker "
                                    "(.dl-train-run)"));
  CHECK_THROWS_AS(dl::RunDirectory(dir.string(), resume), dl::IoError);
  CHECK(read_text(dir / "scores.csv") == "mine");
  CHECK_FALSE(fs::exists(dir / dl::RunDirectory::kMarkerName));
  // Empty, or with the marker (a run dl-train made), it resumes.
  fs::remove(dir / "scores.csv");
  fs::remove(dir / "notes.txt");
  { dl::RunDirectory empty(dir.string(), dl::RunDirectory::Existing::kResume); }
  touch(dir / "scores.csv");
  dl::RunDirectory::check(dir.string(), dl::RunDirectory::Existing::kResume);
  dl::RunDirectory marked(dir.string(), dl::RunDirectory::Existing::kResume);
  CHECK(read_text(dir / "scores.csv") == "partial");
  fs::remove_all(dir);
}

TEST_CASE("checkpoints/ or tensorboard/ that is a link or a file is refused, nothing touched") {
  const fs::path dir = fresh_directory("dl-run-directory-linked-folder");
  const fs::path other = fresh_directory("dl-run-directory-other-run");
  fs::create_directories(other);
  touch(other / "checkpoint-e1-i9.dlck");
  { dl::RunDirectory first(dir.string(), dl::RunDirectory::Existing::kRefuse); }
  touch(dir / "scores.csv");
  for (const char* folder :
       {dl::RunDirectory::kCheckpointsName, dl::RunDirectory::kTensorBoardName}) {
    INFO(folder);
    // Followed, a resume wrote its checkpoints into the other folder and pruned its files there.
    fs::create_directory_symlink(other, dir / folder);
    for (const auto existing :
         {dl::RunDirectory::Existing::kResume, dl::RunDirectory::Existing::kOverwrite}) {
      CHECK_THROWS_WITH(dl::RunDirectory::check(dir.string(), existing),
                        Catch::StartsWith(fmt::format("{}: is a symbolic link (to {}); dl-train "
                                                      "does not write through links",
                                                      (dir / folder).string(), other.string())));
      CHECK_THROWS_AS(dl::RunDirectory(dir.string(), existing), dl::IoError);
    }
    fs::remove(dir / folder);
    touch(dir / folder);
    CHECK_THROWS_WITH(
        dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kResume),
        Catch::Contains("is not a folder, and dl-train writes a folder of that name"));
    fs::remove(dir / folder);
  }
  CHECK(fs::exists(other / "checkpoint-e1-i9.dlck"));
  CHECK(fs::exists(dir / "scores.csv"));
  dl::RunDirectory resumed(dir.string(), dl::RunDirectory::Existing::kResume);
  fs::remove_all(dir);
  fs::remove_all(other);
}

TEST_CASE("--overwrite refuses a directory that holds an input") {
  const fs::path dir = fresh_directory("dl-run-directory-inputs");
  fs::create_directories(dir / "data");
  touch(dir / "data" / "train.gz");
  touch(dir / dl::RunDirectory::kMarkerName);
  const dl::RunDirectory::Protected inputs{{(dir / "data" / "train.gz").string()}};
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kOverwrite, inputs),
                    Catch::Contains("--overwrite refused, nothing deleted: it holds the input "));
  CHECK(fs::exists(dir / "data" / "train.gz"));
  fs::remove_all(dir);
}

TEST_CASE("--overwrite under the marker deletes dl-train's files only") {
  const fs::path dir = fresh_directory("dl-run-directory-own");
  { dl::RunDirectory first(dir.string(), dl::RunDirectory::Existing::kRefuse); }
  fs::create_directories(dir / "checkpoints");
  for (const char* own : {"scores.csv", "summary.json", "model.dlm", "timing.csv.tmp-1",
                          "report.html", "evaluation.json"})
    touch(dir / own);
  touch(dir / "checkpoints" / "checkpoint-e1-i9.dlck");
  touch(dir / "checkpoints" / "mine.txt");
  fs::create_directories(dir / "tensorboard");
  touch(dir / "tensorboard" / "events.out.tfevents.1764122000.host.dl-train");
  touch(dir / "README.txt");
  {
    dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kOverwrite);
    // The old run's TensorBoard events would otherwise mix with the new run's.
    CHECK_FALSE(fs::exists(dir / "tensorboard"));
    CHECK_FALSE(fs::exists(dir / "report.html"));
    CHECK_FALSE(fs::exists(dir / "evaluation.json"));
    CHECK_FALSE(fs::exists(dir / "scores.csv"));
    CHECK_FALSE(fs::exists(dir / "summary.json"));
    CHECK_FALSE(fs::exists(dir / "model.dlm"));
    CHECK_FALSE(fs::exists(dir / "timing.csv.tmp-1"));
    CHECK_FALSE(fs::exists(dir / "checkpoints" / "checkpoint-e1-i9.dlck"));
    CHECK(read_text(dir / "README.txt") == "partial");
    CHECK(fs::exists(dir / "checkpoints" / "mine.txt"));
    CHECK(fs::exists(dir / dl::RunDirectory::kMarkerName));
  }
  fs::remove_all(dir);
}

TEST_CASE("--overwrite keeps an event file another tool wrote into tensorboard/") {
  const fs::path dir = fresh_directory("dl-run-directory-foreign-events");
  { dl::RunDirectory first(dir.string(), dl::RunDirectory::Existing::kRefuse); }
  fs::create_directories(dir / "tensorboard");
  // PyTorch's SummaryWriter names its files events.out.tfevents.<seconds>.<host>.<pid>.<n>.
  touch(dir / "tensorboard" / "events.out.tfevents.1764122000.host.4242.0");
  touch(dir / "tensorboard" / "events.out.tfevents.1764122001.host.dl-train");
  { dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kOverwrite); }
  CHECK(fs::exists(dir / "tensorboard" / "events.out.tfevents.1764122000.host.4242.0"));
  CHECK_FALSE(fs::exists(dir / "tensorboard" / "events.out.tfevents.1764122001.host.dl-train"));
  fs::remove_all(dir);
}

TEST_CASE("a run's file that is a link, a FIFO or a folder is refused, nothing replaced") {
  const fs::path dir = fresh_directory("dl-run-directory-linked-file");
  const fs::path shared = fresh_directory("dl-run-directory-shared-log");
  touch(shared);
  { dl::RunDirectory first(dir.string(), dl::RunDirectory::Existing::kRefuse); }
  touch(dir / "model.dlm");
  // A rename over the link would have cut scores.csv off the log it stands for.
  fs::create_symlink(shared, dir / "scores.csv");
  for (const auto existing :
       {dl::RunDirectory::Existing::kResume, dl::RunDirectory::Existing::kOverwrite}) {
    CHECK_THROWS_WITH(
        dl::RunDirectory(dir.string(), existing),
        Catch::StartsWith(fmt::format("{}: is a symbolic link (to {}); dl-train "
                                      "writes its own file of that name",
                                      (dir / "scores.csv").string(), shared.string())));
  }
  CHECK(fs::is_symlink(dir / "scores.csv"));
  CHECK(read_text(shared) == "partial");
  fs::remove(dir / "scores.csv");
  fs::create_directory(dir / "summary.json");
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kResume),
                    Catch::Contains("summary.json: is a folder, and dl-train writes a regular "
                                    "file of that name"));
  fs::remove(dir / "summary.json");
  fs::remove_all(dir);
  fs::remove(shared);
}

TEST_CASE("a start killed while writing the marker leaves a directory a start may take") {
  const fs::path dir = fresh_directory("dl-run-directory-marker-cut");
  fs::create_directories(dir);
  const std::string dead = std::to_string(dead_process_id());
  touch(dir / (std::string(dl::RunDirectory::kMarkerName) + ".tmp-" + dead));
  touch(dir / dl::RunDirectory::kLockName);
  // Every way back was refused: "holds files (.dl-train-run.tmp-N) but no dl-train marker".
  for (const auto existing : {dl::RunDirectory::Existing::kRefuse,
                              dl::RunDirectory::Existing::kResume,
                              dl::RunDirectory::Existing::kOverwrite})
    CHECK_NOTHROW(dl::RunDirectory::check(dir.string(), existing));
  {
    dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kRefuse);
    CHECK(fs::is_regular_file(dir / dl::RunDirectory::kMarkerName));
    CHECK(run.remove_stale_temporary_files() == 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("a FIFO as the marker is no marker, and is not replaced") {
  const fs::path dir = fresh_directory("dl-run-directory-fifo-marker");
  fs::create_directories(dir);
  const fs::path marker = dir / dl::RunDirectory::kMarkerName;
  REQUIRE(::mkfifo(marker.c_str(), 0644) == 0);
  for (const auto existing :
       {dl::RunDirectory::Existing::kRefuse, dl::RunDirectory::Existing::kResume,
        dl::RunDirectory::Existing::kOverwrite}) {
    CHECK_THROWS_WITH(
        dl::RunDirectory(dir.string(), existing),
        Catch::Contains("is a FIFO (named pipe), and dl-train writes a regular file"));
  }
  touch(dir / "scores.csv");
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kResume),
                    Catch::Contains("is a FIFO (named pipe)"));
  CHECK(fs::status(marker).type() == fs::file_type::fifo);
  fs::remove_all(dir);
}

TEST_CASE("the names of dl-train's files") {
  CHECK(dl::is_run_output_name("scores.csv"));
  CHECK(dl::is_run_output_name("summary.json.tmp-123"));
  CHECK_FALSE(dl::is_run_output_name("scores.csv.bak"));
  CHECK_FALSE(dl::is_run_output_name("notes.txt"));
  CHECK(dl::is_checkpoint_file_name("checkpoint-e1-i9.dlck"));
  CHECK(dl::is_checkpoint_file_name("checkpoint-e1-i9.dlck.tmp-77"));
  CHECK_FALSE(dl::is_checkpoint_file_name("checkpoint-.dlck"));
  CHECK_FALSE(dl::is_checkpoint_file_name("model.dlm"));
}
