// The run directory's claim file, the lock where flock is missing (run_directory_claim.hpp), and
// the mount named in its messages. The fallback itself, under a flock that fails, is
// tests/cli/run_directory_claim.sh.
#include "train/run_directory_claim.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.hpp"
#include "io/descriptor_limit.hpp"
#include "train/mount_point.hpp"
#include "train/run_directory.hpp"

namespace fs = std::filesystem;

namespace {

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

long dead_process_id() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

dl::ClaimHolder holder(long pid, const std::string& host, const std::string& boot) {
  dl::ClaimHolder h;
  h.pid = pid;
  h.host = host;
  h.boot_id = boot;
  h.pid_namespace = "pid:[1]";
  h.start_ticks = 500;
  h.since_unix = 2000;
  h.since = "2026-12-01T10:00:00Z";
  return h;
}

// A machine where only process 7 runs, started at tick 500, booted at time 1000.
dl::ProcessProbe probe(std::int64_t boot_time = 1000) {
  dl::ProcessProbe p;
  p.exists = [](long pid) { return pid == 7; };
  p.start_ticks = [](long pid) -> std::uint64_t { return pid == 7 ? 500 : 0; };
  p.boot_time = boot_time;
  return p;
}

std::string refusal(const std::function<void()>& start) {
  try {
    start();
  } catch (const dl::IoError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a claim's text names its holder and reads back; other text is no claim") {
  const dl::ClaimHolder h = holder(42, "node-1", "b-1");
  const std::optional<dl::ClaimHolder> back = dl::ClaimHolder::parse(h.text());
  REQUIRE(back);
  CHECK(back->text() == h.text());
  CHECK(back->describe() == "pid 42 on host node-1 since 2026-12-01T10:00:00Z");
  CHECK_FALSE(dl::ClaimHolder::parse("pid 42 on host node-1 since 2026-12-01T10:00:00Z\n"));
  CHECK_FALSE(dl::ClaimHolder::parse(""));
  CHECK_FALSE(dl::ClaimHolder::parse("dl-train run directory claim\nhost node-1\n"));
}

TEST_CASE("a claim is judged by host, boot, PID namespace, process and its start time") {
  const dl::ClaimHolder here = holder(99, "node-1", "b-1");
  using V = dl::ClaimVerdict;
  CHECK(dl::judge_claim(holder(7, "node-1", "b-1"), here, probe()) == V::kRunning);
  CHECK(dl::judge_claim(holder(8, "node-1", "b-1"), here, probe()) == V::kGone);
  dl::ClaimHolder reused = holder(7, "node-1", "b-1");
  reused.start_ticks = 400;  // process 7 now is another process than the one that claimed
  CHECK(dl::judge_claim(reused, here, probe()) == V::kGone);
  CHECK(dl::judge_claim(holder(7, "node-2", "b-1"), here, probe()) == V::kOtherMachine);
  dl::ClaimHolder container = holder(8, "node-1", "b-1");
  container.pid_namespace = "pid:[2]";
  CHECK(dl::judge_claim(container, here, probe()) == V::kOtherContainer);
  // Another boot id under this host name: this machine before its boot (claimed at 2000, booted
  // at 3000), or another machine of the same name (claimed after this boot).
  CHECK(dl::judge_claim(holder(7, "node-1", "b-0"), here, probe(3000)) == V::kRebooted);
  CHECK(dl::judge_claim(holder(7, "node-1", "b-0"), here, probe(1000)) == V::kOtherMachine);
  CHECK(dl::judge_claim(holder(7, "node-1", "b-0"), here, probe(0)) == V::kOtherMachine);
  CHECK(dl::claim_can_be_taken_over(V::kGone));
  CHECK(dl::claim_can_be_taken_over(V::kRebooted));
  CHECK_FALSE(dl::claim_can_be_taken_over(V::kRunning));
  CHECK_FALSE(dl::claim_can_be_taken_over(V::kOtherMachine));
  CHECK_FALSE(dl::claim_can_be_taken_over(V::kOtherContainer));
}

TEST_CASE("a claim is taken, refused to a second taker while held, and removed when released") {
  const fs::path dir = fresh_directory("dl-claim-take");
  const fs::path claim = dir / dl::RunDirectory::kClaimName;
  std::string took_over;
  {
    dl::RunDirectoryClaim mine = dl::RunDirectoryClaim::take(dir.string(), took_over);
    CHECK(mine.held());
    CHECK(took_over.empty());
    const auto text = dl::ClaimHolder::parse(read_text(claim));
    REQUIRE(text);
    CHECK(text->pid == getpid());
    const std::string why = refusal([&] { dl::RunDirectoryClaim::take(dir.string(), took_over); });
    CHECK_THAT(why, Catch::Contains("another dl-train is using this run directory (pid " +
                                    std::to_string(getpid())));
    CHECK_THAT(why, Catch::Contains("still running): it holds the claim file " + claim.string()));
    CHECK_THAT(why, Catch::Contains("remove " + claim.string() + " once you are sure"));
    CHECK_THROWS_AS(dl::check_run_directory_claim(dir.string()), dl::IoError);
    CHECK(fs::exists(claim));  // a refused taker leaves the holder's claim
  }
  CHECK_FALSE(fs::exists(claim));
  CHECK(fs::is_empty(dir));  // no temporary file either
  dl::check_run_directory_claim(dir.string());
  fs::remove_all(dir);
}

TEST_CASE("a dead holder's claim is taken over; another machine's is refused and kept") {
  const fs::path dir = fresh_directory("dl-claim-stale");
  const fs::path claim = dir / dl::RunDirectory::kClaimName;
  dl::ClaimHolder dead = dl::this_process_holder();
  dead.pid = dead_process_id();
  dead.start_ticks = 0;
  std::ofstream(claim) << dead.text();
  dl::check_run_directory_claim(dir.string());  // stale: a start may go on
  std::string took_over;
  {
    dl::RunDirectoryClaim mine = dl::RunDirectoryClaim::take(dir.string(), took_over);
    CHECK(took_over == dead.describe() + ", which runs no more");
    CHECK(dl::ClaimHolder::parse(read_text(claim))->pid == getpid());
  }
  CHECK_FALSE(fs::exists(claim));

  dl::ClaimHolder elsewhere = dead;
  elsewhere.host = "other-node-17";
  std::ofstream(claim) << elsewhere.text();
  const std::string why = refusal([&] { dl::RunDirectoryClaim::take(dir.string(), took_over); });
  CHECK_THAT(why, Catch::Contains(elsewhere.describe() +
                                  ", on another machine, whose processes cannot be checked"));
  CHECK(read_text(claim) == elsewhere.text());
  // Text that is no claim is refused, not taken over: dl-train did not write it.
  std::ofstream(claim) << "notes\n";
  CHECK_THAT(refusal([&] { dl::check_run_directory_claim(dir.string()); }),
             Catch::Contains("(a claim file dl-train cannot read)"));
  CHECK(read_text(claim) == "notes\n");
  fs::remove_all(dir);
}

TEST_CASE("releasing removes only this process's own claim") {
  const fs::path dir = fresh_directory("dl-claim-release");
  const fs::path claim = dir / dl::RunDirectory::kClaimName;
  std::string took_over;
  dl::RunDirectoryClaim mine = dl::RunDirectoryClaim::take(dir.string(), took_over);
  // Removed by hand and claimed by another process meanwhile: that claim is not ours to remove.
  const std::string other = holder(7, "node-2", "b-1").text();
  std::ofstream(claim) << other;
  mine.release();
  CHECK(read_text(claim) == other);
  fs::remove_all(dir);
}

TEST_CASE("a run directory with flock still refuses a running claim (a mount without flock)") {
  const fs::path dir = fresh_directory("dl-claim-mixed");
  const fs::path claim = dir / dl::RunDirectory::kClaimName;
  std::ofstream(claim) << holder(7, "other-node-17", "b-1").text();
  CHECK_THROWS_WITH(dl::RunDirectory(dir.string(), dl::RunDirectory::Existing::kRefuse),
                    Catch::Contains("pid 7 on host other-node-17"));
  CHECK_THROWS_AS(dl::RunDirectory::check(dir.string(), dl::RunDirectory::Existing::kRefuse),
                  dl::IoError);
  fs::remove(claim);
  dl::RunDirectory run(dir.string(), dl::RunDirectory::Existing::kRefuse);
  fs::remove_all(dir);
}

TEST_CASE("a claim file that cannot be opened for want of descriptors is no claim of another") {
  const fs::path dir = fresh_directory("dl-claim-descriptors");
  const std::string what = dl::test::io_error_without_descriptors(
      [&] { dl::check_run_directory_claim(dir.string()); });
  // It said "another dl-train is using this run directory (a claim file dl-train cannot read)".
  CHECK(what == (dir / ".dl-train.claim").string() +
                    ": cannot tell whether another dl-train claims the run directory (opening its "
                    "claim file: Too many open files); raise this process's limit on open files "
                    "(ulimit -n)");
  fs::remove_all(dir);
}

TEST_CASE("the mount holding a path: the longest mount point above it, the last one shown") {
  const fs::path dir = fresh_directory("dl-mountinfo");
  const fs::path table = dir / "mountinfo";
  std::ofstream(table)
      << "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      << "40 22 0:40 / /lustre rw shared:5 - lustre 10.0.0.1@tcp:/fs rw,noflock\n"
      << "41 40 0:41 / /lustre/my\\040runs rw - nfs4 server:/export\\040x rw\n"
      << "42 22 0:42 / /lus rw - tmpfs tmpfs rw\n"
      << "43 22 0:43 / /lustre rw master:2 unbindable - lustre 10.0.0.2@tcp:/fs2 rw\n"
      << "not a mount line\n";
  const dl::MountPoint lustre = dl::mount_point_of("/lustre/scratch/run", table.string());
  CHECK(lustre.path == "/lustre");
  CHECK(lustre.type == "lustre");
  CHECK(lustre.source == "10.0.0.2@tcp:/fs2");  // the later mount hides the earlier one
  CHECK(lustre.describe() == "mount /lustre of type lustre from 10.0.0.2@tcp:/fs2");
  const dl::MountPoint spaced = dl::mount_point_of("/lustre/my runs/a", table.string());
  CHECK(spaced.path == "/lustre/my runs");
  CHECK(spaced.source == "server:/export x");
  CHECK(dl::mount_point_of("/lusty", table.string()).path == "/");  // not /lus: parts compare
  CHECK(dl::mount_point_of("/x", (dir / "missing").string()).describe() ==
        "an unknown file system");
  fs::remove_all(dir);
}
