#include "io/checkpoint_directory.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace dl {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kNamePrefix = "checkpoint-e";
constexpr std::string_view kIterationMarker = "-i";
constexpr std::string_view kNameSuffix = ".dlck";

struct CheckpointName {
  std::int64_t epoch = 0;
  std::int64_t iteration = 0;
  std::string path;
};

std::string checkpoint_file_name(std::int64_t epoch, std::int64_t iteration) {
  return fmt::format("{}{}{}{}{}", kNamePrefix, epoch, kIterationMarker, iteration, kNameSuffix);
}

// Parses a whole decimal number; false unless all of `text` is one.
bool parse_number(std::string_view text, std::int64_t* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && *value >= 0;
}

// Recognizes the names save() gives, "checkpoint-e<epoch>-i<iteration>.dlck", and nothing else.
bool parse_checkpoint_name(std::string_view name, CheckpointName* parsed) {
  if (name.size() <= kNamePrefix.size() + kNameSuffix.size()) return false;
  if (name.substr(0, kNamePrefix.size()) != kNamePrefix) return false;
  if (name.substr(name.size() - kNameSuffix.size()) != kNameSuffix) return false;
  const std::string_view numbers =
      name.substr(kNamePrefix.size(), name.size() - kNamePrefix.size() - kNameSuffix.size());
  const std::size_t marker = numbers.find(kIterationMarker);
  if (marker == std::string_view::npos) return false;
  return parse_number(numbers.substr(0, marker), &parsed->epoch) &&
         parse_number(numbers.substr(marker + kIterationMarker.size()), &parsed->iteration);
}

}  // namespace

std::string CheckpointDirectory::longest_file_name() {
  constexpr std::int64_t kLargest = std::numeric_limits<std::int64_t>::max();
  return checkpoint_file_name(kLargest, kLargest);
}

CheckpointDirectory::CheckpointDirectory(std::string directory, int keep_last)
    : directory_(std::move(directory)), keep_last_(keep_last) {
  DL_CHECK(keep_last_ >= 1, "a checkpoint directory keeps at least one checkpoint");
}

std::string CheckpointDirectory::save(const CheckpointState& state) {
  std::error_code ec;
  // One level only: the folder it sits in (the run directory) was made and claimed at start. One
  // that is gone was removed or renamed while training, and making it again would go on writing
  // a run directory without its marker, resolved config or logs, and exit 0.
  fs::create_directory(directory_, ec);
  const fs::path parent = fs::path(directory_).parent_path();
  if (ec && !parent.empty() && !fs::is_directory(parent)) {
    throw IoError(fmt::format(
        "{}: cannot create the checkpoint directory: {} is gone (removed or renamed while "
        "training); move it back and --resume, or start the run again",
        directory_, parent.string()));
  }
  if (ec) {
    throw IoError(fmt::format(
        "{}: cannot create the checkpoint directory: {}; check write permission and free space",
        directory_, ec.message()));
  }
  const std::string file_name = checkpoint_file_name(state.epoch, state.iteration);
  const std::string path = (fs::path(directory_) / file_name).string();
  write_checkpoint(path, state);

  std::vector<std::string> existing = list();
  std::size_t excess =
      existing.size() > static_cast<std::size_t>(keep_last_) ? existing.size() - keep_last_ : 0;
  for (const std::string& old : existing) {
    if (excess == 0) break;
    if (fs::path(old).filename() == file_name) continue;
    if (!fs::remove(old, ec) && ec) {
      throw IoError(
          fmt::format("{}: cannot delete this old checkpoint: {}; check permissions of {}", old,
                      ec.message(), directory_));
    }
    --excess;
  }
  return path;
}

std::optional<std::pair<std::string, CheckpointState>> CheckpointDirectory::load_newest_valid(
    std::vector<std::string>* warnings) const {
  const std::vector<std::string> paths = list();
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    try {
      CheckpointState state = read_checkpoint(*it);
      // A model file renamed into the directory reads back valid but holds no position or
      // updater state: resuming from it failed later with a message about the config's keys or
      // the updater, and hid older checkpoints that would resume.
      if (state.kind != kCheckpointKind) {
        throw CheckpointError(fmt::format(
            "{}: is a {} file, not a checkpoint: it holds no position or updater state to resume "
            "from",
            *it, state.kind));
      }
      // The name decides which checkpoint is the newest (and which save() prunes), the contents
      // where training goes on: a file renamed or copied in under a newer name than it holds
      // took a resume back to its older place, and every later resume again.
      CheckpointName name;
      if (parse_checkpoint_name(fs::path(*it).filename().string(), &name) &&
          (name.epoch != state.epoch || name.iteration != state.iteration)) {
        throw CheckpointError(fmt::format(
            "{}: its name says epoch index {}, iteration {}, but it holds epoch index {}, "
            "iteration {} (renamed or copied in?); rename it to {} or move it away",
            *it, name.epoch, name.iteration, state.epoch, state.iteration,
            checkpoint_file_name(state.epoch, state.iteration)));
      }
      return std::make_pair(*it, std::move(state));
    } catch (const CheckpointError& e) {
      if (warnings != nullptr) {
        // The message starts with the file's path.
        warnings->push_back(fmt::format("skipping checkpoint {}", e.what()));
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> CheckpointDirectory::list() const {
  std::error_code ec;
  const bool exists = fs::exists(directory_, ec);
  if (!exists && !ec) return {};
  std::vector<CheckpointName> found;
  fs::directory_iterator it(directory_, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    CheckpointName name;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    if (!parse_checkpoint_name(it->path().filename().string(), &name)) continue;
    name.path = it->path().string();
    found.push_back(std::move(name));
  }
  if (ec) {
    throw IoError(fmt::format("{}: cannot list the checkpoint directory: {}; check permissions",
                              directory_, ec.message()));
  }
  std::sort(found.begin(), found.end(), [](const CheckpointName& a, const CheckpointName& b) {
    return std::tie(a.iteration, a.epoch, a.path) < std::tie(b.iteration, b.epoch, b.path);
  });
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (CheckpointName& name : found) paths.push_back(std::move(name.path));
  return paths;
}

}  // namespace dl
