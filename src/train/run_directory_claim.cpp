#include "train/run_directory_claim.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/node_identity.hpp"
#include "io/atomic_file.hpp"
#include "io/file_access.hpp"
#include "io/posix_write.hpp"
#include "train/mount_point.hpp"
#include "train/run_directory.hpp"

namespace dl {

namespace {

constexpr const char* kHeader = "dl-train run directory claim";
constexpr std::size_t kLongestClaim = 4096;  // a claim is a few hundred bytes
// Starts that meet a claim being taken over by another start look again this often.
constexpr int kClaimTries = 4;

std::string utc_text(std::time_t when) {
  std::tm utc{};
  gmtime_r(&when, &utc);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string pid_namespace_of_this_process() {
  char target[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

// Field 22 of /proc/<pid>/stat, after the command name in parentheses (which may hold spaces).
std::uint64_t process_start_ticks(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

std::int64_t machine_boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      std::int64_t seconds = 0;
      in >> seconds;
      return seconds;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

// The claim file's content; nullopt when there is none (or it went away meanwhile), "" when it
// cannot be read (a link, no permission), which no claim parses. An IoError when whether there is
// one cannot be told: out of descriptors (EMFILE), an I/O error. Taken for a claim that cannot
// be read, such an error refused the start as "another dl-train is using this run directory".
std::optional<std::string> read_claim(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0 && errno != ELOOP && errno != EACCES && errno != EPERM) {
    const int err = errno;
    throw IoError(
        fmt::format("{}: cannot tell whether another dl-train claims the run directory "
                    "(opening its claim file: {}); {}",
                    path, std::strerror(err), write_failure_fix(err)));
  }
  if (fd < 0) return std::string();
  char text[kLongestClaim] = {};
  const ssize_t n = ::pread(fd, text, sizeof text, 0);
  ::close(fd);
  return n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
}

std::string verdict_reason(ClaimVerdict verdict) {
  switch (verdict) {
    case ClaimVerdict::kRunning:
      return "still running";
    case ClaimVerdict::kGone:
      return "which runs no more";
    case ClaimVerdict::kRebooted:
      return "from before this machine's last boot";
    case ClaimVerdict::kOtherMachine:
      return "on another machine, whose processes cannot be checked from here";
    case ClaimVerdict::kOtherContainer:
      return "in another PID namespace (container) of this machine, whose processes cannot be "
             "checked from here";
  }
  return "";
}

[[noreturn]] void throw_claimed(const std::string& directory, const std::string& holder) {
  const std::string claim = claim_path(directory);
  throw IoError(fmt::format(
      "{}: another dl-train is using this run directory ({}): it holds the claim file {}, which "
      "dl-train uses instead of flock where a file system has none ({}); wait for that run "
      "to end, or remove {} once you are sure it has ended",
      directory, holder, claim, mount_point_of(directory).describe(), claim));
}

// The claim's holder and why it may be taken over ("pid 5 on host n1 since ..., which runs no
// more"); throws the refusal when it may not.
std::string judge_or_refuse(const std::string& directory, const std::string& text) {
  const std::optional<ClaimHolder> holder = ClaimHolder::parse(text);
  if (!holder) throw_claimed(directory, "a claim file dl-train cannot read");
  const ClaimVerdict verdict = judge_claim(*holder, this_process_holder(), this_machine_probe());
  const std::string who = holder->describe() + ", " + verdict_reason(verdict);
  if (!claim_can_be_taken_over(verdict)) throw_claimed(directory, who);
  return who;
}

// Publishes the complete claim in `temp` as `claim`: true when this process now holds it. A
// link(2) over NFS whose reply was lost reports failure after it succeeded; the temporary file's
// link count tells (open(2), O_EXCL).
bool publish(int temp_fd, const std::string& temp, const std::string& claim) {
  if (::link(temp.c_str(), claim.c_str()) == 0) return true;
  const int err = errno;
  struct stat st {};
  if (::fstat(temp_fd, &st) == 0 && st.st_nlink == 2) return true;
  if (err != EEXIST)
    throw IoError(
        fmt::format("{}: cannot create the run directory's claim file ({}); check the "
                    "directory's permissions",
                    claim, std::strerror(err)));
  return false;
}

// Moves the stale claim `stale_text` out of the way. Another start may take it over at the same
// moment: only one rename of it succeeds, and a claim renamed that turns out to be newer than the
// one judged (another start's, made meanwhile) is put back.
void remove_stale_claim(const std::string& claim, const std::string& stale_text) {
  // A temporary file's name: left behind by a process killed right here, it is removed as theirs.
  const std::string aside = temporary_path(claim + ".stale", ::getpid());
  if (::rename(claim.c_str(), aside.c_str()) != 0) return;
  if (read_claim(aside).value_or("") != stale_text) (void)::link(aside.c_str(), claim.c_str());
  ::unlink(aside.c_str());
}

// The temporary file holding this process's complete claim; its descriptor stays open.
int write_temporary_claim(const std::string& temp, const std::string& text) {
  const int fd = create_temporary(temp);
  if (fd < 0 || write_all(fd, text.data(), text.size()) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw IoError(
        fmt::format("{}: cannot write the run directory's claim ({}); check free disk "
                    "space and the directory's permissions",
                    temp, std::strerror(err)));
  }
  return fd;
}

}  // namespace

std::string claim_path(const std::string& directory) {
  return directory + "/" + RunDirectory::kClaimName;
}

std::string ClaimHolder::text() const {
  return fmt::format(
      "{}\npid {}\nhost {}\nboot_id {}\npid_namespace {}\nstart_ticks {}\n"
      "since {}\nsince_unix {}\n",
      kHeader, pid, host, boot_id, pid_namespace, start_ticks, since, since_unix);
}

std::optional<ClaimHolder> ClaimHolder::parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return std::nullopt;
  ClaimHolder holder;
  while (std::getline(in, line)) {
    const std::size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "pid") holder.pid = std::strtol(value.c_str(), nullptr, 10);
    if (key == "host") holder.host = value;
    if (key == "boot_id") holder.boot_id = value;
    if (key == "pid_namespace") holder.pid_namespace = value;
    if (key == "start_ticks") holder.start_ticks = std::strtoull(value.c_str(), nullptr, 10);
    if (key == "since") holder.since = value;
    if (key == "since_unix") holder.since_unix = std::strtoll(value.c_str(), nullptr, 10);
  }
  if (holder.pid <= 0 || holder.host.empty()) return std::nullopt;
  return holder;
}

std::string ClaimHolder::describe() const {
  return fmt::format("pid {} on host {} since {}", pid, host, since);
}

ClaimHolder this_process_holder() {
  ClaimHolder me;
  me.pid = ::getpid();
  me.host = host_name();
  me.boot_id = boot_id();
  me.pid_namespace = pid_namespace_of_this_process();
  me.start_ticks = process_start_ticks(me.pid);
  const std::time_t now = std::time(nullptr);
  me.since_unix = static_cast<std::int64_t>(now);
  me.since = utc_text(now);
  return me;
}

ProcessProbe this_machine_probe() {
  ProcessProbe probe;
  // Signal 0 checks existence only; EPERM means it exists but belongs to someone else.
  probe.exists = [](long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; };
  probe.start_ticks = process_start_ticks;
  probe.boot_time = machine_boot_time();
  return probe;
}

ClaimVerdict judge_claim(const ClaimHolder& holder, const ClaimHolder& here,
                         const ProcessProbe& probe) {
  if (holder.host != here.host) return ClaimVerdict::kOtherMachine;
  if (holder.boot_id != here.boot_id) {
    // Another boot id under this host name: this machine rebooted, or another machine has the
    // same name (containers often do). Only a claim made before this machine booted is surely
    // this machine's own.
    const bool before_boot = probe.boot_time > 0 && holder.since_unix > 0 &&
                             holder.since_unix < probe.boot_time && !holder.boot_id.empty();
    return before_boot ? ClaimVerdict::kRebooted : ClaimVerdict::kOtherMachine;
  }
  if (!holder.pid_namespace.empty() && !here.pid_namespace.empty() &&
      holder.pid_namespace != here.pid_namespace)
    return ClaimVerdict::kOtherContainer;
  if (!probe.exists(holder.pid)) return ClaimVerdict::kGone;
  // The id may now belong to another process: its start time tells.
  const std::uint64_t started = holder.start_ticks != 0 ? probe.start_ticks(holder.pid) : 0;
  if (started != 0 && started != holder.start_ticks) return ClaimVerdict::kGone;
  return ClaimVerdict::kRunning;
}

bool claim_can_be_taken_over(ClaimVerdict verdict) {
  return verdict == ClaimVerdict::kGone || verdict == ClaimVerdict::kRebooted;
}

RunDirectoryClaim RunDirectoryClaim::take(const std::string& directory, std::string& took_over) {
  const std::string claim = claim_path(directory);
  const std::string temp = temporary_path(claim, ::getpid());
  RunDirectoryClaim mine;
  mine.text_ = this_process_holder().text();
  const int fd = write_temporary_claim(temp, mine.text_);
  const auto done = [&] {
    ::close(fd);
    ::unlink(temp.c_str());
  };
  try {
    for (int attempt = 0; attempt < kClaimTries; ++attempt) {
      if (publish(fd, temp, claim)) {
        done();
        mine.path_ = claim;
        return mine;
      }
      const std::optional<std::string> text = read_claim(claim);
      if (!text) continue;  // released or moved meanwhile: try again
      took_over = judge_or_refuse(directory, *text);
      remove_stale_claim(claim, *text);
    }
  } catch (...) {
    done();
    throw;
  }
  done();
  throw IoError(fmt::format(
      "{}: cannot claim the run directory: other starts are claiming it at the same time ({}); "
      "start one dl-train per run directory",
      directory, claim));
}

RunDirectoryClaim::RunDirectoryClaim(RunDirectoryClaim&& other) noexcept
    : path_(std::exchange(other.path_, std::string())), text_(std::move(other.text_)) {}

RunDirectoryClaim& RunDirectoryClaim::operator=(RunDirectoryClaim&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::exchange(other.path_, std::string());
    text_ = std::move(other.text_);
  }
  return *this;
}

void RunDirectoryClaim::release() {
  if (path_.empty()) return;
  // Only this process's own claim: one that is not (removed by hand and claimed again since) is
  // left to its holder.
  if (read_claim(path_) == std::optional<std::string>(text_)) ::unlink(path_.c_str());
  path_.clear();
}

void check_run_directory_claim(const std::string& directory) {
  const std::optional<std::string> text = read_claim(claim_path(directory));
  if (text) (void)judge_or_refuse(directory, *text);
}

}  // namespace dl
