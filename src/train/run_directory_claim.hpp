// The run directory's lock where flock does not work (Lustre mounted with noflock, some NFS
// mounts: flock fails with ENOLCK, EOPNOTSUPP, ENOSYS or EINVAL): a claim file, created whole
// and at once by link(2) of a complete temporary file (atomic on NFS too), naming its holder by
// process id, host name, boot id, PID namespace and the process's start time. dl-train removes
// the claim it made when the run ends. Unlike flock, nothing releases a claim when its holder
// dies, so a start judges an existing claim: a holder on this machine (same host name, boot id and
// PID namespace) that no longer runs, or a claim of this host from before its last boot, is
// taken over; a running holder, or one on another machine or in another container, whose process
// cannot be checked from here, is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace dl {

// Who holds a claim: what the claim file says.
struct ClaimHolder {
  long pid = 0;
  std::string host;
  std::string boot_id;            // "" where the system has none
  std::string pid_namespace;      // e.g. "pid:[4026531836]"; "" when unknown
  std::uint64_t start_ticks = 0;  // the process's start, in clock ticks after boot; 0: unknown
  std::int64_t since_unix = 0;    // when it claimed, seconds since 1970
  std::string since;              // the same, ISO 8601 UTC

  std::string text() const;  // the claim file's content
  // What a claim file's content says; nullopt when it is not a claim dl-train wrote.
  static std::optional<ClaimHolder> parse(const std::string& text);
  std::string describe() const;  // "pid 123 on host n1 since 2026-12-07T10:00:00Z"
};

// This process, as its claim names it.
ClaimHolder this_process_holder();

// How a claim's holder stands, seen from the process `here`.
enum class ClaimVerdict {
  kRunning,         // the holder's process runs on this machine
  kGone,            // it ran on this machine and boot, and runs no more: taken over
  kRebooted,        // this host has booted since the claim was made: taken over
  kOtherMachine,    // another host, or this host name on another machine: cannot be checked
  kOtherContainer,  // this machine, another PID namespace: cannot be checked
};

// What the judgement needs of the processes here (tests pass their own): whether `pid` exists,
// its start time in clock ticks after boot (0: unknown), and when this machine booted (seconds
// since 1970; 0: unknown).
struct ProcessProbe {
  std::function<bool(long)> exists;
  std::function<std::uint64_t(long)> start_ticks;
  std::int64_t boot_time = 0;
};
ProcessProbe this_machine_probe();

ClaimVerdict judge_claim(const ClaimHolder& holder, const ClaimHolder& here,
                         const ProcessProbe& probe);
bool claim_can_be_taken_over(ClaimVerdict verdict);

// A claim this process holds on a run directory; removes its claim file when released or
// destroyed, and only while the file still holds this process's claim.
class RunDirectoryClaim {
 public:
  RunDirectoryClaim() = default;
  ~RunDirectoryClaim() { release(); }
  RunDirectoryClaim(RunDirectoryClaim&& other) noexcept;
  RunDirectoryClaim& operator=(RunDirectoryClaim&& other) noexcept;
  RunDirectoryClaim(const RunDirectoryClaim&) = delete;
  RunDirectoryClaim& operator=(const RunDirectoryClaim&) = delete;

  // Claims `directory` (an existing directory) for this process. A stale claim is taken over;
  // `took_over` then describes it ("pid 5 on host n1 since ..., which runs no more"), else it is
  // left empty. A claim held elsewhere is refused with an IoError naming the holder, the claim
  // file, its file system and the fix.
  static RunDirectoryClaim take(const std::string& directory, std::string& took_over);

  bool held() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  void release();

 private:
  std::string path_;
  std::string text_;
};

// Throws the IoError of `take` when the claim on `directory` is held by a running process or
// cannot be checked; a missing or stale claim passes. Touches nothing.
void check_run_directory_claim(const std::string& directory);

// "<directory>/.dl-train.claim".
std::string claim_path(const std::string& directory);

}  // namespace dl
