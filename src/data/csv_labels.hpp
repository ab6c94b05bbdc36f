// The label column of a CSV file (data.format: csv): class indices or class names, decided by the
// training file (docs/CONFIG.md, "CSV files"):
//   - every label of the training rows reads as a class index (a non-negative whole number, as
//     DL4J reads it: "3", also "3.0"): the labels are indices, as before, each below numClasses;
//   - otherwise (one text label is enough, so numbers mixed with text are text): every label is a
//     class name, the classes are the distinct labels in byte order and a label is its class's
//     position there. They become the data set's class names, as an image folder's folders do.
// The test file, a validation file and `predict --input` are read with the training file's
// classes: names must be among them, indices below numClasses.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dl {

// `text` as a finite number, the one rule for a CSV field (feature or label): decimal or
// scientific notation, with an optional sign, + included (Python's float(), pandas and NumPy
// read "+2"; std::from_chars alone refuses it); or nothing. A number nearer zero than float's
// smallest is float's nearest (1e-50 is 0), as NumPy's float32 reads it.
std::optional<float> csv_number(std::string_view text);
// Whether `text` is a number beyond float's range (3.5e38, 1e999), which csv_number refuses.
bool csv_number_too_large(std::string_view text);

// `text` as a class index (a finite, non-negative whole number), or nothing.
std::optional<float> label_as_index(std::string_view text);

// The training file's classes from its labels (in row order): no names when each reads as a class
// index, else the distinct labels sorted by bytes, and which label made them names.
struct CsvClasses {
  std::vector<std::string> names;  // empty: the labels are class indices
  std::size_t first_name = 0;      // with names: the position of the first label not an index
  std::size_t index_labels = 0;    // with names: the labels that read as class indices
};
CsvClasses csv_classes(const std::vector<std::string_view>& labels);

// The position of `label` among `names` (sorted, as csv_class_names makes them), or nothing.
std::optional<int> find_class(const std::vector<std::string>& names, std::string_view label);

// "'a', 'b', 'c'" for a message, each name quoted as user text; past a few names, the first ones
// and "... (N classes)".
std::string quoted_class_list(const std::vector<std::string>& names);

}  // namespace dl
