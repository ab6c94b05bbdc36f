#include "train/run_directory.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "core/error.hpp"

namespace dl {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(std::string path, Existing existing) : path_(std::move(path)) {
  std::error_code ec;
  const bool exists = fs::exists(path_, ec);
  if (exists && !fs::is_directory(path_, ec)) {
    throw IoError(path_ + ": the output directory is a file; set output.directory to a directory");
  }
  const bool has_run = exists && !fs::is_empty(path_, ec);
  if (has_run && existing == Existing::kRefuse) {
    throw IoError(path_ +
                  ": this output directory already holds a run; pass --resume to continue it, "
                  "--overwrite to replace it, or set output.directory elsewhere");
  }
  if (has_run && existing == Existing::kOverwrite) {
    fs::remove_all(path_, ec);
    if (ec) throw IoError(path_ + ": cannot remove the old run (" + ec.message() + ")");
  }
  fs::create_directories(path_, ec);
  if (ec) {
    throw IoError(path_ + ": cannot create the output directory (" + ec.message() +
                  "); check output.directory and its permissions");
  }
}

namespace {

// The writer's process id when `name` is "<anything>.tmp-<digits>", else 0.
pid_t temporary_file_owner(const std::string& name) {
  constexpr std::string_view kMarker = ".tmp-";
  const auto at = name.rfind(kMarker);
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = name.substr(at + kMarker.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::strtol(digits.c_str(), nullptr, 10));
}

bool process_exists(pid_t pid) {
  // Signal 0 checks existence only; EPERM means it exists but belongs to someone else.
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

int RunDirectory::remove_stale_temporary_files() const {
  int removed = 0;
  for (const std::string& dir : {path_, checkpoints()}) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const pid_t owner = temporary_file_owner(it->path().filename().string());
      if (owner <= 0 || owner == ::getpid() || process_exists(owner)) continue;
      std::error_code remove_error;
      if (fs::remove(it->path(), remove_error)) ++removed;
    }
  }
  return removed;
}

}  // namespace dl
