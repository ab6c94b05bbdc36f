#include "train/listeners/csv_log.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/message_text.hpp"
#include "io/atomic_file.hpp"
#include "io/file_access.hpp"
#include "io/run_files.hpp"

namespace dl {

namespace {

// The global iteration of a row with `fields` fields (the second one), or -1 for a row that is
// not one: another field count, or an iteration that is not a number (a line cut short, edited).
long long row_iteration(const std::string& line, std::size_t fields) {
  if (static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1 != fields) return -1;
  const auto first = line.find(',');
  const std::string field = line.substr(first + 1, line.find(',', first + 1) - first - 1);
  char* end = nullptr;
  const long long iteration = std::strtoll(field.c_str(), &end, 10);
  return field.empty() || *end != '\0' || iteration < 0 ? -1 : iteration;
}

// The checkpoint's metadata key of the last row's iteration of the log at `path`.
std::string last_row_key(const std::string& path) {
  return "last_row_iteration:" + std::filesystem::path(path).filename().string();
}

}  // namespace

void CsvLog::on_checkpoint_restore(const CheckpointState& state, const std::string&) {
  resumed_ = true;
  const std::size_t fields =
      static_cast<std::size_t>(std::count(header_.begin(), header_.end(), ',')) + 1;
  // The header is written whatever the file held: a log emptied or removed before the resume
  // would otherwise go on without one, and a CSV reader would take its first row for it.
  std::string kept = header_ + "\n";
  // Read as the run's own file: a FIFO in its place is refused (exit 6), not waited on for ever.
  const std::optional<std::string> text =
      read_optional_text(path_, InputRole::kRunOutput, run_files::kMaxLogBytes);
  std::istringstream in(text.value_or(std::string()));
  std::string line, first_damaged;
  bool header = false;
  int dropped = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line == header_) {
      header = true;
      continue;
    }
    const long long iteration = row_iteration(line, fields);
    if (iteration >= 0 && iteration <= state.iteration) {
      kept += line + "\n";
      last_iteration_ = std::max<std::int64_t>(last_iteration_, iteration);
    }
    // A last line without its line end is a write cut short by a kill, past the checkpoint.
    const bool cut_by_kill = in.eof();
    if (iteration < 0 && !cut_by_kill && ++dropped == 1)
      first_damaged = fmt::format("line {}: '{}'", number, quoted_value(line));
  }
  std::vector<std::string> damage;
  if (!text) damage.emplace_back("missing");
  if (text && !header) damage.emplace_back("its header was missing");
  if (dropped > 0)
    damage.push_back(fmt::format("{} damaged row(s) dropped ({})", dropped, first_damaged));
  // The rows were durable when the checkpoint was written: fewer now is a file cut since (by
  // hand, or a copy of the run taken mid-write). A checkpoint of an older dl-train says nothing.
  const auto recorded = state.metadata.find(last_row_key(path_));
  if (text && recorded != state.metadata.end() &&
      std::strtoll(recorded->second.c_str(), nullptr, 10) > last_iteration_)
    damage.push_back(
        fmt::format("its rows end at iteration {}, but it held rows up to iteration "
                    "{} when the checkpoint was written (it was cut since)",
                    last_iteration_, recorded->second));
  if (!damage.empty()) {
    // Rows up to the checkpoint are not trained again, so what was lost of them stays lost; said
    // once, so that a reader knows why the log may have a gap.
    std::cerr << fmt::format(
                     "dl-train: warning: {}: {}; written again with its header, but rows lost up "
                     "to the checkpoint's iteration {} are not written again",
                     quoted_path(path_), fmt::join(damage, ", "), state.iteration)
              << std::endl;
  }
  // Written when training goes on (on_start): a resume of a run that has ended leaves the file
  // as it is. Unchanged (a kill right after a checkpoint), it is not written.
  if (kept != text) kept_ = std::move(kept);
}

void CsvLog::on_checkpoint_save(CheckpointState& state) {
  file_->sync();
  state.metadata[last_row_key(path_)] = std::to_string(last_iteration_);
}

void CsvLog::on_start(const RunInfo&) {
  if (resumed_) {
    if (kept_) write_file_atomically(path_, *kept_);
    kept_.reset();
    file_ = std::make_unique<AppendFile>(path_);
    return;
  }
  file_ = std::make_unique<AppendFile>(path_, AppendFile::Mode::kTruncate);
  file_->append_line(header_);
}

}  // namespace dl
