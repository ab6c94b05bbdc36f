// Files that are not what they seem: inputs that are FIFOs, devices or directories are refused
// by name without blocking, and writes in the run directory never follow a symbolic link.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "io/append_file.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint.hpp"
#include "io/file_access.hpp"
#include "temp_directory.hpp"

namespace dl {
namespace {

using Catch::Matchers::Contains;
using test::TempDirectory;

TEST_CASE("inputs that are not regular files are refused by name, each with its exit code",
          "[io][file_access]") {
  TempDirectory dir;
  const std::string fifo = dir.file("model.dlm");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // No writer: an ordinary open() would block here.
  CHECK_THROWS_WITH(read_checkpoint(fifo),
                    fifo +
                        ": is a FIFO (named pipe), not a regular file; give the path of a "
                        ".dlm model or .dlck checkpoint file");
  CHECK_THROWS_AS(read_checkpoint(fifo), CheckpointError);
  CHECK_THROWS_AS(InputFd(fifo, InputRole::kData), DataError);
  CHECK_THROWS_WITH(InputFd("/dev/null", InputRole::kData),
                    "/dev/null: is a character device, not a regular file; give the path of "
                    "the data file itself (in the data keys, or predict's --input)");
  CHECK_THROWS_WITH(InputFd(dir.path(), InputRole::kCheckpoint),
                    Catch::Contains("is a directory, not a regular file"));
}

TEST_CASE("a missing data file gets the download scripts only where they fetch it",
          "[io][file_access]") {
  const auto message = [](const std::string& path) {
    try {
      InputFd input(path, InputRole::kData);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  const std::string scripts = "scripts/get_data.sh fetches MNIST and Fashion-MNIST";
  CHECK_THAT(message("/nonexistent/train-images-idx3-ubyte.gz"), Contains(scripts));
  CHECK_THAT(message("/nonexistent/cifar-10-batches-bin/data_batch_3.bin"), Contains(scripts));
  // A user's own files: those scripts would not bring them back.
  CHECK(message("/nonexistent/rows.csv") ==
        "/nonexistent/rows.csv: cannot open: No such file or directory; check the path");
  CHECK(message("/nonexistent/cat/0001.jpg") ==
        "/nonexistent/cat/0001.jpg: cannot open: No such file or directory; check the path");
  // A tilde only a shell expands, written into a config or a quoted --set.
  CHECK_THAT(message("~/nonexistent-dl-train-test/rows.csv"),
             Contains("rows.csv: cannot open: No such file or directory; a path that starts with "
                      "~ is not expanded"));
}

TEST_CASE("InputFd reads a regular file and enforces a size limit", "[io][file_access]") {
  TempDirectory dir;
  const std::string path = dir.file("small.yaml");
  write_file_atomically(path, "epochs: 1\n");
  InputFd input(path, InputRole::kConfig, 10);
  CHECK(input.size() == 10);
  CHECK_THROWS_WITH(InputFd(path, InputRole::kConfig, 9),
                    path +
                        ": is 10 bytes, over the limit of 9 bytes (0 MiB) for a config; give "
                        "--config the path of a YAML file");
  CHECK(read_config_text(path) == "epochs: 1\n");
}

TEST_CASE("an atomic write does not follow a link planted at its temporary name",
          "[io][file_access]") {
  TempDirectory dir;
  const std::string victim = dir.file("victim.txt");
  write_file_atomically(victim, "keep me\n");
  const std::string path = dir.file("summary.json");
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  REQUIRE(symlink(victim.c_str(), temp.c_str()) == 0);
  write_file_atomically(path, "{}\n");
  CHECK(test::read_bytes(victim) == "keep me\n");
  CHECK(test::read_bytes(path) == "{}\n");
  CHECK(dir.entries() == std::vector<std::string>{"summary.json", "victim.txt"});
}

TEST_CASE("an append-only file refuses a symbolic link", "[io][file_access]") {
  TempDirectory dir;
  const std::string victim = dir.file("victim.txt");
  write_file_atomically(victim, "keep me\n");
  const std::string path = dir.file("scores.csv");
  REQUIRE(symlink(victim.c_str(), path.c_str()) == 0);
  CHECK_THROWS_WITH(AppendFile(path, AppendFile::Mode::kTruncate),
                    path +
                        ": is a symbolic link; dl-train does not write through links in its "
                        "run directory: remove it");
  CHECK_THROWS_AS(AppendFile(path, AppendFile::Mode::kAppend), IoError);
  CHECK(test::read_bytes(victim) == "keep me\n");
}

}  // namespace
}  // namespace dl
