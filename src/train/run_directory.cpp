#include "train/run_directory.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/message_text.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint_directory.hpp"
#include "io/run_files.hpp"
#include "report/tensorboard_writer.hpp"
#include "train/run_directory_lock.hpp"
#include "train/run_directory_path.hpp"

namespace dl {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTemporaryMarker = ".tmp-";
constexpr const char* kMarkerText =
    "This directory is a dl-train run directory. dl-train --overwrite deletes the files dl-train "
    "wrote here (and only those).\n";

// The writer's process id when `name` is "<anything>.tmp-<digits>", else 0.
pid_t temporary_file_owner(const std::string& name) {
  const auto at = name.rfind(kTemporaryMarker);
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = name.substr(at + kTemporaryMarker.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(digits.c_str(), nullptr, 10));
}

// `name` without a ".tmp-<pid>" suffix of an atomic write.
std::string without_temporary_suffix(const std::string& name) {
  if (temporary_file_owner(name) <= 0) return name;
  return name.substr(0, name.rfind(kTemporaryMarker));
}

// A temporary file an atomic write of the run directory's own files makes: an output's, the
// marker's, or the claim's (and the stale claim moved aside, ".dl-train.claim.stale.tmp-<pid>").
bool is_own_temporary_name(const std::string& name) {
  return is_run_output_name(name) ||
         without_temporary_suffix(name).rfind(RunDirectory::kClaimName, 0) == 0;
}

bool process_exists(pid_t pid) {
  // Signal 0 checks existence only; EPERM means it exists but belongs to someone else.
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// What a directory holds, sorted into dl-train's own files and everything else.
struct Contents {
  bool marker = false;               // the marker, a regular file
  bool marker_present = false;       // an entry of the marker's name, whatever its type
  bool has_run = false;              // anything besides the marker and the lock
  std::vector<fs::path> own;         // deletable by --overwrite (checkpoints/ as its files)
  std::vector<std::string> foreign;  // names, relative to the directory
  // An entry a run writes that is not what it writes: checkpoints/ or tensorboard/ that is not
  // a folder, or one of the run's files (the marker, scores.csv, ...) that is not a regular file
  // (a symbolic link, a FIFO, a folder). Why a run may not write there, "" when it may.
  std::string unusable_entry;
};

// Why a run may not write into `entry`, of type `type`, which it uses as a folder; "" if it may.
std::string unusable_subdirectory(const fs::path& entry, fs::file_type type) {
  if (type == fs::file_type::directory) return {};
  if (type == fs::file_type::symlink) {
    std::error_code ec;
    // Followed, checkpoints would be written and pruned (keepLast) in the folder it points to,
    // another run's perhaps, deleting files there.
    return fmt::format(
        "{}: is a symbolic link (to {}); dl-train does not write through links in its run "
        "directory (pruning old checkpoints there would delete files in the folder it points "
        "to): remove it, or set output.directory to a folder on the file system it points to",
        quoted_path(entry.string()), quoted_path(fs::read_symlink(entry, ec).string()));
  }
  return fmt::format(
      "{}: is not a folder, and dl-train writes a folder of that name in its run directory: "
      "move it away",
      quoted_path(entry.string()));
}

const char* file_type_words(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory:
      return "a folder";
    case fs::file_type::fifo:
      return "a FIFO (named pipe)";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::block:
    case fs::file_type::character:
      return "a device";
    default:
      return "not a regular file";
  }
}

// Why a run may not write its file `entry`, of type `type`; "" if it may. A run replaces its
// files by renaming a new one over them: a link would be replaced, not written through (a
// scores.csv linked to a shared log would silently stop being that log), and a FIFO as the
// marker would say "a run directory" of a folder no run made.
std::string unusable_file(const fs::path& entry, fs::file_type type) {
  if (type == fs::file_type::regular) return {};
  if (type == fs::file_type::symlink) {
    std::error_code ec;
    return fmt::format(
        "{}: is a symbolic link (to {}); dl-train writes its own file of that name and does not "
        "write through links in its run directory: replace the link with a copy of the file it "
        "points to, or set output.directory elsewhere",
        quoted_path(entry.string()), quoted_path(fs::read_symlink(entry, ec).string()));
  }
  return fmt::format(
      "{}: is {}, and dl-train writes a regular file of that name in its run directory: move it "
      "away",
      quoted_path(entry.string()), file_type_words(type));
}

void note_unusable(Contents& contents, std::string why) {
  if (contents.unusable_entry.empty()) contents.unusable_entry = std::move(why);
}

// The files of one of dl-train's subdirectories (checkpoints/, tensorboard/): those whose names
// `is_own` accepts are dl-train's, anything else is foreign.
void sort_subdirectory(const fs::path& dir, bool (*is_own)(const std::string&),
                       Contents& contents) {
  std::error_code ec;
  const std::string prefix = dir.filename().string() + "/";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (is_own(name) && it->symlink_status(type_ec).type() == fs::file_type::regular)
      contents.own.push_back(it->path());
    else
      contents.foreign.push_back(prefix + name);
  }
}

Contents read_contents(const std::string& path) {
  Contents contents;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    const fs::file_type type = it->symlink_status(type_ec).type();
    if (name == RunDirectory::kMarkerName) {
      contents.marker_present = true;
      contents.marker = type == fs::file_type::regular;
      note_unusable(contents, unusable_file(it->path(), type));
      continue;
    }
    // The lock and the claim (with a claim's temporary files) say who runs here, not what ran;
    // nor does the marker's temporary file, which a start killed while writing the marker left
    // (it made every later start, resume and overwrite refuse the directory).
    const std::string base = without_temporary_suffix(name);
    if (base == RunDirectory::kLockName || base.rfind(RunDirectory::kClaimName, 0) == 0 ||
        (base == RunDirectory::kMarkerName && base != name))
      continue;
    contents.has_run = true;
    if (name == RunDirectory::kCheckpointsName || name == RunDirectory::kTensorBoardName)
      note_unusable(contents, unusable_subdirectory(it->path(), type));
    if (is_run_output_name(name)) note_unusable(contents, unusable_file(it->path(), type));
    if (name == RunDirectory::kCheckpointsName && type == fs::file_type::directory) {
      sort_subdirectory(it->path(), is_checkpoint_file_name, contents);
    } else if (name == RunDirectory::kTensorBoardName && type == fs::file_type::directory) {
      sort_subdirectory(it->path(), is_own_event_file_name, contents);
    } else if (is_run_output_name(name) && type == fs::file_type::regular) {
      contents.own.push_back(it->path());
    } else {
      contents.foreign.push_back(name);
    }
  }
  if (ec) {
    throw IoError(fmt::format("{}: cannot list the output directory: {}; check its permissions",
                              path, ec.message()));
  }
  std::sort(contents.foreign.begin(), contents.foreign.end());
  return contents;
}

fs::path canonical_or_self(const fs::path& path) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : resolved;
}

bool is_same_or_ancestor(const fs::path& dir, const fs::path& path) {
  const auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end() || (std::next(d) == dir.end() && d->empty());
}

// The first few names of what a directory holds that may not be dl-train's, for a message.
std::string example_names(const Contents& contents) {
  std::string examples;
  for (std::size_t i = 0; i < contents.foreign.size() && i < 3; ++i)
    examples += (i == 0 ? "" : ", ") + contents.foreign[i];
  if (examples.empty() && !contents.own.empty()) examples = contents.own.front().filename();
  return examples;
}

// Why --overwrite must not delete in `path`, or "" when it may.
std::string overwrite_refusal(const std::string& path, const RunDirectory::Protected& inputs,
                              const Contents& contents) {
  const fs::path dir = canonical_or_self(path);
  if (dir == dir.root_path()) return "it is the file system root";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0' && dir == canonical_or_self(home))
    return "it is your home directory";
  std::error_code ec;
  if (dir == canonical_or_self(fs::current_path(ec))) return "it is the working directory";
  for (const std::string& input : inputs.inputs) {
    if (!input.empty() && is_same_or_ancestor(dir, canonical_or_self(input)))
      return fmt::format("it holds the input {}", input);
  }
  if (!contents.marker) {
    return fmt::format("it has no dl-train marker ({}), so its files ({}) may not be dl-train's",
                       RunDirectory::kMarkerName, example_names(contents));
  }
  return "";
}

void refuse_unusable_entry(const Contents& contents) {
  if (!contents.unusable_entry.empty()) throw IoError(contents.unusable_entry);
}

// Refuses, with an IoError, what `existing` does not allow in a directory holding `contents`.
void refuse_existing(const std::string& path, RunDirectory::Existing existing,
                     const RunDirectory::Protected& inputs, const Contents& contents) {
  if (!contents.has_run) return refuse_unusable_entry(contents);
  if (existing == RunDirectory::Existing::kResume) {
    // Only a directory dl-train made holds the marker (a start refuses one that holds anything):
    // without it, --resume would write its logs over files of the same names that are not
    // dl-train's and delete their temporary files, in a directory given by mistake.
    if (contents.marker_present) return refuse_unusable_entry(contents);
    throw IoError(fmt::format(
        "{}: --resume refused, nothing written: the directory holds files ({}) but no dl-train "
        "marker ({}), so it is not a run directory dl-train made; set output.directory to the "
        "directory of the run to continue, or, if these files are a run copied without its "
        "marker, copy that too (or create it: touch {}/{})",
        path, example_names(contents), RunDirectory::kMarkerName, path, RunDirectory::kMarkerName));
  }
  if (existing == RunDirectory::Existing::kRefuse) {
    if (!contents.marker) {
      // Neither --resume nor --overwrite takes a directory dl-train did not make.
      throw IoError(fmt::format(
          "{}: this output directory holds files that are not a dl-train run ({}); set "
          "output.directory to a new or empty directory",
          path, example_names(contents)));
    }
    throw IoError(path +
                  ": this output directory already holds a run; pass --resume to continue it, "
                  "--overwrite to replace it, or set output.directory elsewhere");
  }
  const std::string why = overwrite_refusal(path, inputs, contents);
  if (!why.empty()) {
    throw IoError(fmt::format(
        "{}: --overwrite refused, nothing deleted: {}; set output.directory to a directory of "
        "its own",
        path, why));
  }
  refuse_unusable_entry(contents);
}

// The run's outputs, by name (the marker and the lock too).
const std::set<std::string>& run_output_names() {
  static const std::set<std::string> kOutputs = [] {
    std::set<std::string> names(std::begin(run_files::kAll), std::end(run_files::kAll));
    names.insert({RunDirectory::kMarkerName, RunDirectory::kLockName, RunDirectory::kClaimName});
    return names;
  }();
  return kOutputs;
}

// The longest path, relative to the run directory, that a run may write: a checkpoint's (of the
// largest epoch and iteration) or another output's temporary file, or a TensorBoard event file.
std::string longest_output_path() {
  std::vector<std::string> paths = {
      std::string(RunDirectory::kCheckpointsName) + "/" +
          longest_temporary_path(CheckpointDirectory::longest_file_name()),
      std::string(RunDirectory::kTensorBoardName) + "/" + event_file_name_now()};
  for (const std::string& name : run_output_names()) paths.push_back(longest_temporary_path(name));
  return *std::max_element(paths.begin(), paths.end(),
                           [](const auto& a, const auto& b) { return a.size() < b.size(); });
}

void remove_own_files(const std::string& path, const Contents& contents) {
  for (const fs::path& file : contents.own) {
    std::error_code ec;
    fs::remove(file, ec);
    if (ec)
      throw IoError(fmt::format("{}: cannot remove the old run's {} ({})", path, file.string(),
                                ec.message()));
  }
  std::error_code ignored;
  // Each subdirectory goes only when nothing else is left in it.
  fs::remove(fs::path(path) / RunDirectory::kCheckpointsName, ignored);
  fs::remove(fs::path(path) / RunDirectory::kTensorBoardName, ignored);
}

}  // namespace

bool is_run_output_name(const std::string& name) {
  return run_output_names().count(without_temporary_suffix(name)) != 0;
}

bool is_checkpoint_file_name(const std::string& name) {
  const std::string base = without_temporary_suffix(name);
  constexpr std::string_view kPrefix = "checkpoint-", kSuffix = ".dlck";
  return base.size() > kPrefix.size() + kSuffix.size() && base.rfind(kPrefix, 0) == 0 &&
         base.compare(base.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

void RunDirectory::check(const std::string& path, Existing existing, const Protected& inputs) {
  check_output_path(path, longest_output_path());
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  check_run_directory_lock(path);
  refuse_existing(path, existing, inputs, read_contents(path));
}

RunDirectory RunDirectory::view(std::string path) {
  return RunDirectory(std::move(path));
}

RunDirectory::RunDirectory(std::string path, Existing existing, const Protected& inputs)
    : path_(std::move(path)) {
  check_output_path(path_, longest_output_path());
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) {
    throw IoError(path_ + ": cannot create the output directory (" + ec.message() +
                  "); check output.directory and its permissions");
  }
  lock_ = take_run_directory_lock(path_);
  try {
    // Under the lock, the directory is what it is: decide again, now for good.
    const Contents contents = read_contents(path_);
    refuse_existing(path_, existing, inputs, contents);
    if (existing == Existing::kOverwrite) remove_own_files(path_, contents);
    if (!contents.marker) write_file_atomically(file(kMarkerName), kMarkerText);
  } catch (...) {
    lock_.release();
    throw;
  }
}

RunDirectory::~RunDirectory() = default;

RunDirectory::RunDirectory(RunDirectory&& other) noexcept
    : path_(std::move(other.path_)), lock_(std::move(other.lock_)) {}

int RunDirectory::remove_stale_temporary_files() const {
  int removed = 0;
  for (const bool in_checkpoints : {false, true}) {
    const std::string dir = in_checkpoints ? checkpoints() : path_;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const pid_t owner = temporary_file_owner(name);
      if (owner <= 0 || owner == ::getpid() || process_exists(owner)) continue;
      // Only the temporary files of what dl-train writes: "notes.tmp-2024" is someone else's.
      if (!(in_checkpoints ? is_checkpoint_file_name(name) : is_own_temporary_name(name))) continue;
      std::error_code remove_error;
      if (fs::remove(it->path(), remove_error)) ++removed;
    }
  }
  return removed;
}

}  // namespace dl
