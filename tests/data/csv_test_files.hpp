// What the CSV reader's tests share: a request for their small files (a header line, two
// features, three classes) and a text file written into a test directory.
#pragma once

#include <string>

#include "data/csv_reader.hpp"
#include "idx_test_files.hpp"

namespace dl::test {

inline CsvRequest csv_request(const std::string& path) {
  CsvRequest r;
  r.path = path;
  r.skip_lines = 1;
  r.features = 2;
  r.num_classes = 3;
  return r;
}

inline std::string write_text(const TempDir& dir, const std::string& name,
                              const std::string& text) {
  const std::string path = dir.file(name);
  write_plain(path, Bytes(text.begin(), text.end()));
  return path;
}

}  // namespace dl::test
