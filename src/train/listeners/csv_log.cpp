#include "train/listeners/csv_log.hpp"

#include <cstdlib>
#include <fstream>

#include "io/atomic_file.hpp"

namespace dl {

void CsvLog::on_checkpoint_restore(const CheckpointState& state, const std::string&) {
  resumed_ = true;
  std::ifstream in(path_);
  if (!in) return;
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      kept += line + "\n";
      header = false;
      continue;
    }
    const auto first = line.find(',');
    const auto second = line.find(',', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string field = line.substr(first + 1, second - first - 1);
    char* end = nullptr;
    const long long row_iteration = std::strtoll(field.c_str(), &end, 10);
    if (!field.empty() && *end == '\0' && row_iteration <= state.iteration) kept += line + "\n";
  }
  write_file_atomically(path_, kept);
}

void CsvLog::on_start(const RunInfo&) {
  if (resumed_) {
    file_ = std::make_unique<AppendFile>(path_);
    return;
  }
  file_ = std::make_unique<AppendFile>(path_, AppendFile::Mode::kTruncate);
  file_->append_line(header_);
}

}  // namespace dl
