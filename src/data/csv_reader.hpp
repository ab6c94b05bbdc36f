// Reader for CSV files of numbers (data.format: csv), as DL4J's CSVRecordReader with
// RecordReaderDataSetIterator reads them: `skip_lines` lines skipped (a header), then one sample
// per row, its fields split at `delimiter`, one of them the class label (an integer below
// num_classes, or a class name: csv_labels.hpp) and the others the features, in order. A field
// may be quoted as RFC 4180 quotes ("0.5", or a header's "pixel, 1"), line breaks included, as
// pandas and Python's csv module read them: a row ends at a line end outside quotes
// (csv_text.hpp), is named by the line it starts on, and a row starting within the skipped lines
// is skipped whole. Blank lines are ignored; "\r\n" line ends and a leading UTF-8 byte order mark
// (spreadsheet exports) are accepted. Rows are parsed on the readers' thread pool, each into its
// own slot.
//
// Every defect is a DataError "path: line N: what is wrong; what to do": a row with another number
// of fields than inputType's size plus the label, a field that is not a finite number, a label
// that is not a class index (or not one of the training file's class names); with on_bad_row
// skip such rows are left out, counted and named. A training file whose labels name more classes
// than num_classes is a DataError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/dataset.hpp"

namespace dl {

struct CsvRequest {
  std::string path;
  int skip_lines = 0;
  char delimiter = ',';
  int label_index = -1;  // -1: the last field
  int features = 0;      // fields per row besides the label
  // What the config makes `features`, for messages: "inputType's feedForward size 784" (empty:
  // "784 features").
  std::string features_source;
  int num_classes = 0;
  BadFileAction on_bad_row = BadFileAction::kStop;
  std::int64_t limit = 0;  // > 0: only the first `limit` rows
  // Unset for the training file, whose labels decide its classes (csv_labels.hpp). For any other
  // file the training set's classes: their names, or none when they are indices; and where they
  // come from, for messages ("the training file data/train.csv", "the model").
  std::optional<std::vector<std::string>> classes;
  std::string classes_source;
  // For predict: each sample's line is named in DataOrigin::sample_sources.
  bool name_lines = false;
};

// The file's samples; its classes, when they are names, are the data set's class names (its
// origin's).
Dataset read_csv(const CsvRequest& request);
// The classes read_csv would give the file (names; empty: indices), with the same checks and
// errors, without keeping its features: the training file's, for the other files.
std::vector<std::string> read_csv_classes(const CsvRequest& request);

}  // namespace dl
