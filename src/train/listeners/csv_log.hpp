// A CSV log of the run directory whose second column is the global iteration (scores.csv,
// timing.csv): appended line by line, and on resume cut back to the checkpoint's iteration so it
// reads as one uninterrupted run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/append_file.hpp"

namespace dl {

class CsvLog {
 public:
  CsvLog(std::string path, std::string header)
      : path_(std::move(path)), header_(std::move(header)) {}

  // Resume: keeps the header and the rows up to `iteration`; a damaged row (a crash in the
  // middle of writing it) is dropped. The rows after the checkpoint are written again.
  void cut_after(std::int64_t iteration);
  // Opens the log: a fresh one with its header, or (after cut_after) the kept rows to append to.
  void open();
  void append(std::string_view row) { file_->append_line(row); }
  void sync() { file_->sync(); }

 private:
  std::string path_;
  std::string header_;
  bool resumed_ = false;
  std::unique_ptr<AppendFile> file_;
};

}  // namespace dl
