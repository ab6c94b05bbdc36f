#include "train/run_directory_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/message_text.hpp"

namespace dl {

namespace fs = std::filesystem;

namespace {

// The longest name the file system holding `path` (or the nearest folder above it that exists)
// allows.
std::size_t name_limit(const std::string& path) {
  fs::path existing = fs::path(path).empty() ? fs::path(".") : fs::path(path);
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_relative_path())
    existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  const long limit = ::pathconf(existing.c_str(), _PC_NAME_MAX);
  return limit > 0 ? static_cast<std::size_t>(limit) : static_cast<std::size_t>(NAME_MAX);
}

// Refuses, with an IoError, an output directory in which the paths a run writes would be longer
// than the system allows: else the run would fail at its first checkpoint, after training.
void check_path_lengths(const std::string& path, const std::string& longest) {
  const std::size_t names = name_limit(path);
  for (const fs::path& part : fs::path(path)) {
    const std::string name = part.string();
    if (name.size() > names)
      throw IoError(fmt::format(
          "{}: the output directory's part '{}' is {} bytes long, over the file system's limit "
          "of {} bytes for a name (NAME_MAX); set output.directory to a path of shorter names",
          quoted_path(path), quoted_value(name), name.size(), names));
  }
  // PATH_MAX counts the terminating NUL.
  constexpr std::size_t kLongestPath = PATH_MAX - 1;
  const std::size_t length = path.size() + 1 + longest.size();
  if (length > kLongestPath)
    throw IoError(fmt::format(
        "{}: the output directory's path is {} bytes long, so the longest path a run writes in it "
        "({}) would be {} bytes, over the system's limit of {} bytes (PATH_MAX); set "
        "output.directory to a path of at most {} bytes",
        quoted_path(path), path.size(), longest, length, kLongestPath,
        kLongestPath - 1 - longest.size()));
}

// Refuses, with an IoError, an output directory that is a file, or that cannot be made or
// written: a part of its path that is a file or a symbolic link to nothing (which creating it
// met as "File exists"), or a nearest existing folder this process may not write. Checked before
// the data is read, so that such a start fails at once.
void check_is_directory(const std::string& path) {
  fs::path prefix;
  bool exists = true;
  for (const fs::path& part : fs::path(path)) {
    prefix /= part;
    std::error_code ec;
    const fs::file_status own = fs::symlink_status(prefix, ec);
    if (own.type() == fs::file_type::not_found) {
      exists = false;
      break;
    }
    const fs::file_status followed = fs::status(prefix, ec);
    const std::string where = prefix == fs::path(path) ? std::string("the output directory")
                                                       : quoted_path(prefix.string());
    if (fs::is_symlink(own) && followed.type() == fs::file_type::not_found) {
      throw IoError(fmt::format(
          "{}: {} is a symbolic link to {}, which does not exist; create that directory, or set "
          "output.directory elsewhere",
          quoted_path(path), where, quoted_path(fs::read_symlink(prefix, ec).string())));
    }
    if (followed.type() != fs::file_type::directory) {
      throw IoError(
          fmt::format("{}: {} is a file, not a directory; set output.directory to a directory",
                      quoted_path(path), where));
    }
  }
  // The directory where it exists, else the folder it would be made in.
  const fs::path folder = exists                         ? fs::path(path)
                          : prefix.parent_path().empty() ? fs::path(".")
                                                         : prefix.parent_path();
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw IoError(fmt::format(
        "{}: cannot {} ({}: {}); check output.directory and its permissions", quoted_path(path),
        exists ? "write in the output directory" : "create the output directory",
        quoted_path(folder.string()), std::strerror(errno)));
  }
}

}  // namespace

void check_output_path(const std::string& path, const std::string& longest) {
  check_path_lengths(path, longest);
  check_is_directory(path);
}

}  // namespace dl
