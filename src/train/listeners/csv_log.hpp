// The listener part shared by the CSV logs of the run directory whose second column is the
// global iteration (scores.csv, timing.csv): appended line by line, made durable before each
// checkpoint, and on resume cut back to the checkpoint's iteration so it reads as one
// uninterrupted run. A log adds its rows in on_sync_point.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "io/append_file.hpp"
#include "train/training_listener.hpp"

namespace dl {

class CsvLog : public TrainingListener {
 public:
  CsvLog(std::string path, std::string header)
      : path_(std::move(path)), header_(std::move(header)) {}

  // Writes the header, then the rows up to the checkpoint's iteration that have the header's
  // field count; a last line cut short by a kill is dropped silently, other damage (the file
  // missing, its header or a row damaged, rows the checkpoint says were written missing) is said
  // on standard error. The rows after the checkpoint are written again.
  void on_checkpoint_restore(const CheckpointState& state, const std::string& path) override;
  // Opens the log: a fresh one with its header, or the rows kept on resume to append to.
  void on_start(const RunInfo& info) override;
  // Makes the rows durable and records the iteration of the last one in the checkpoint.
  void on_checkpoint_save(CheckpointState& state) override;

 protected:
  // A row of the global iteration `iteration`.
  void append(std::int64_t iteration, std::string_view row) {
    file_->append_line(row);
    last_iteration_ = iteration;
  }

 private:
  std::string path_;
  std::string header_;
  bool resumed_ = false;
  std::optional<std::string> kept_;  // the rows a resume keeps, until training goes on
  std::int64_t last_iteration_ = 0;  // of the last row written (kept, on resume); 0 for none
  std::unique_ptr<AppendFile> file_;
};

}  // namespace dl
