#include "cli/prediction_csv.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/class_names.hpp"
#include "core/figure_text.hpp"

namespace dl {
namespace {

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

PredictionCsv::PredictionCsv(int classes, const std::vector<std::string>& names,
                             std::string source_column, bool labelled)
    : classes_(classes), names_(names), sourced_(!source_column.empty()), labelled_(labelled) {
  text_ = "index";
  if (sourced_) text_ += "," + source_column;
  if (labelled_) text_ += ",label";
  text_ += ",predicted";
  if (!names_.empty()) text_ += ",predicted_class";
  for (int c = 0; c < classes_; ++c) text_ += fmt::format(",p{}", c);
  text_ += "\n";
}

int PredictionCsv::add(std::int64_t index, std::string_view source, std::int32_t label,
                       const float* outputs) {
  const int predicted = static_cast<int>(std::max_element(outputs, outputs + classes_) - outputs);
  text_ += std::to_string(index);
  if (sourced_) text_ += "," + csv_field(source);
  if (labelled_) text_ += "," + std::to_string(label);
  text_ += "," + std::to_string(predicted);
  // A class past the last name (an output layer wider than the data's classes) has none.
  if (!names_.empty()) {
    const std::string* name = class_name(names_, predicted);
    text_ += "," + (name == nullptr ? std::string() : csv_field(*name));
  }
  // 9 significant digits: every float reads back exactly.
  for (int c = 0; c < classes_; ++c) text_ += fmt::format(",{:.9g}", figure(outputs[c]));
  text_ += "\n";
  return predicted;
}

}  // namespace dl
