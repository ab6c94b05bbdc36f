#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "descriptor_limit.hpp"
#include "file_size_limit.hpp"
#include "io/atomic_file.hpp"
#include "temp_directory.hpp"

namespace dl {
namespace {

using test::TempDirectory;

TEST_CASE("write_file_atomically creates and replaces a file", "[io][atomic_file]") {
  TempDirectory dir;
  const std::string path = dir.file("summary.json");
  write_file_atomically(path, "{\"a\": 1}\n");
  REQUIRE(test::read_bytes(path) == "{\"a\": 1}\n");
  write_file_atomically(path, "");
  REQUIRE(test::read_bytes(path).empty());
  const std::string first = "first ", second = "second";
  write_file_atomically(
      path, std::vector<ByteSpan>{{first.data(), first.size()}, {second.data(), second.size()}});
  REQUIRE(test::read_bytes(path) == "first second");
  REQUIRE(dir.entries() == std::vector<std::string>{"summary.json"});
}

TEST_CASE("write_file_atomically failing on the size limit keeps the old file",
          "[io][atomic_file]") {
  constexpr rlim_t kLimitBytes = 1024;
  TempDirectory dir;
  const std::string path = dir.file("config.yaml");
  write_file_atomically(path, "old content\n");
  const std::string too_big(4 * kLimitBytes, 'x');
  const std::string outcome = test::run_with_file_size_limit(kLimitBytes, [&] {
    try {
      write_file_atomically(path, too_big);
      return 1;
    } catch (const IoError& e) {
      const std::string message = e.what();
      const bool names_path = message.find(path) != std::string::npos;
      const bool names_reason = message.find(std::strerror(EFBIG)) != std::string::npos;
      return names_path && names_reason ? 0 : 2;
    }
  });
  REQUIRE(outcome == "exit 0");
  REQUIRE(test::read_bytes(path) == "old content\n");
  REQUIRE(dir.entries() == std::vector<std::string>{"config.yaml"});
}

TEST_CASE("an output that cannot be opened for want of descriptors names the limit to raise",
          "[io][atomic_file]") {
  TempDirectory dir;
  const std::string what = test::io_error_without_descriptors(
      [&] { write_file_atomically(dir.file("evaluation.txt"), "x"); });
  // It said to check free disk space, write permission and the file size limit.
  CHECK_THAT(what,
             Catch::Matchers::EndsWith(
                 "Too many open files); raise this process's limit on open files (ulimit -n)"));
}

TEST_CASE("write_file_atomically into a missing directory throws IoError", "[io][atomic_file]") {
  TempDirectory dir;
  const std::string path = dir.file("no/such/dir/file.txt");
  REQUIRE_THROWS_AS(write_file_atomically(path, "x"), IoError);
  REQUIRE_THROWS_WITH(write_file_atomically(path, "x"),
                      Catch::Contains(path) && Catch::Contains(std::strerror(ENOENT)));
  // The folder is named as missing: the advice for a failed write (disk space, permission, size
  // limit) does not fit, and predict -o new/x.csv used to get it.
  REQUIRE_THROWS_WITH(
      write_file_atomically(path, "x"),
      Catch::Contains("the folder " + dir.file("no/such/dir") + " does not exist") &&
          !Catch::Contains("free disk space"));
  // A file where a folder should be (ENOTDIR) is told the same way.
  write_file_atomically(dir.file("plain"), "x");
  REQUIRE_THROWS_WITH(write_file_atomically(dir.file("plain/file.txt"), "x"),
                      Catch::Contains("the folder " + dir.file("plain") + " does not exist"));
}

// A FIFO (or a device: predict -o /dev/full, /dev/stdout) used to be replaced by the rename, a
// regular file left in its place; it is written into and stays what it was.
TEST_CASE("write_named_output writes into a FIFO, never replaces it", "[io][atomic_file]") {
  TempDirectory dir;
  const std::string fifo = dir.file("predictions.csv");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  SECTION("read by another descriptor") {
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    write_named_output(fifo, "index,predicted\n");
    char got[64] = {};
    const ssize_t n = ::read(reader, got, sizeof got);
    ::close(reader);
    CHECK(std::string(got, n > 0 ? static_cast<std::size_t>(n) : 0) == "index,predicted\n");
  }
  SECTION("read by nobody: refused at once, not blocked") {
    REQUIRE_THROWS_WITH(write_named_output(fifo, "x"),
                        Catch::Contains("FIFO (named pipe) that no process is reading"));
  }
  struct stat after {};
  REQUIRE(::lstat(fifo.c_str(), &after) == 0);
  CHECK(S_ISFIFO(after.st_mode));
  CHECK(dir.entries() == std::vector<std::string>{"predictions.csv"});
}

// `predict -o /dev/stdout > out.csv`: the link names a descriptor on a regular file. The rename
// replaced the link (run as root, /dev/stdout itself) and the redirected file stayed empty.
TEST_CASE("write_named_output appends through a link to one of its descriptors",
          "[io][atomic_file]") {
  TempDirectory dir;
  const std::string out = dir.file("out.csv");
  test::write_bytes(out, "first\n");
  const int fd = ::open(out.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  const std::string link = dir.file("stdout");
  REQUIRE(::symlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), link.c_str()) == 0);
  write_named_output(link, "index,predicted\n");
  ::close(fd);
  CHECK(test::read_bytes(out) == "first\nindex,predicted\n");
  struct stat after {};
  REQUIRE(::lstat(link.c_str(), &after) == 0);
  CHECK(S_ISLNK(after.st_mode));
}

TEST_CASE("write_named_output refuses a directory by name", "[io][atomic_file]") {
  TempDirectory dir;
  const std::string folder = dir.file("out");
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  REQUIRE_THROWS_AS(write_named_output(folder, "x"), IoError);
  REQUIRE_THROWS_WITH(write_named_output(folder, "x"),
                      Catch::Contains("it is a directory; name a file in it"));
  CHECK(dir.entries() == std::vector<std::string>{"out"});
}

// The files dl-train names itself (a run directory's) are never written through: a link planted
// there, to a FIFO or a device (summary.json -> /dev/sda), is replaced by the rename, its target
// left alone, as the run directory's rule "created, never followed" has it.
TEST_CASE("write_file_atomically replaces a link to a FIFO, never writes through it",
          "[io][atomic_file]") {
  TempDirectory dir;
  const std::string fifo = dir.file("target-fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string link = dir.file("summary.json");
  REQUIRE(::symlink(fifo.c_str(), link.c_str()) == 0);
  write_file_atomically(link, "{}\n");  // would block for ever on a FIFO nobody reads
  struct stat after {};
  REQUIRE(::lstat(link.c_str(), &after) == 0);
  CHECK(S_ISREG(after.st_mode));
  CHECK(test::read_bytes(link) == "{}\n");
  REQUIRE(::lstat(fifo.c_str(), &after) == 0);
  CHECK(S_ISFIFO(after.st_mode));
}

}  // namespace
}  // namespace dl
