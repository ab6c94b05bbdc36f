#include "data/csv_row.hpp"

#include <fmt/format.h>

#include <limits>

#include "core/message_text.hpp"
#include "data/csv_labels.hpp"
#include "data/csv_text.hpp"

namespace dl::csv {
namespace {

// A label names a class in messages and run files (UTF-8: JSON, HTML), and model files keep the
// names one per line: what is wrong with `text` as a label, or nothing.
std::optional<std::string> label_problem(std::string_view text, int field) {
  if (text.empty()) return fmt::format("the label (field {}) is empty", field + 1);
  if (message_text::find_non_utf8(text) != std::string_view::npos ||
      message_text::find_control(text) != std::string_view::npos)
    return fmt::format("the label (field {}) '{}' is not UTF-8 text without control characters",
                       field + 1, quoted_value(text));
  return std::nullopt;
}

// A label field's text: the field's, or `unescaped` holding it with each "" pair read as one
// quote.
std::string_view label_of(const Field& f, std::string& unescaped) {
  if (!f.doubled_quotes) return f.text;
  unescaped = unescaped_quotes(f.text);
  return unescaped;
}

}  // namespace

int label_field(const CsvRequest& r) {
  return r.label_index < 0 ? r.features : r.label_index;
}

std::optional<std::string> parse_row(std::string_view row, const CsvRequest& r, float* out,
                                     std::string_view& label, std::string& unescaped) {
  const int fields = r.features + 1;
  const int label_at = label_field(r);
  int field = 0;
  int feature = 0;
  for (std::size_t start = 0;; ++field) {
    const Field f = next_field(row, start, r.delimiter);
    if (f.error != nullptr)
      return fmt::format("field {} has {}; close the quote, or write the number unquoted",
                         field + 1, f.error);
    if (field == label_at) {
      label = label_of(f, unescaped);
      if (auto problem = label_problem(label, field)) return problem;
    } else if (field < fields) {
      const std::optional<float> value = csv_number(f.text);
      if (!value && csv_number_too_large(f.text))
        return fmt::format("field {} ('{}') is beyond float32's range (+-3.4e38); scale the column",
                           field + 1, quoted_value(f.text));
      if (!value)
        return fmt::format("field {} ('{}') is not a finite number", field + 1,
                           quoted_value(f.text));
      if (out != nullptr) out[feature++] = *value;
    }
    if (f.next > row.size()) break;
    start = f.next;
  }
  if (field + 1 != fields)
    return fmt::format(
        "{} fields, but {} and the label make {}", field + 1,
        r.features_source.empty() ? fmt::format("{} features", r.features) : r.features_source,
        fields);
  return std::nullopt;
}

std::string_view label_text(std::string_view row, const CsvRequest& r, std::string& scratch) {
  std::size_t start = 0;
  for (int field = 0; field < label_field(r); ++field)
    start = next_field(row, start, r.delimiter).next;
  return label_of(next_field(row, start, r.delimiter), scratch);
}

std::int32_t label_code(std::string_view label) {
  const std::optional<float> index = label_as_index(label);
  if (!index) return kTextLabel;
  // A float from 2^31 on is past every numClasses; the cast would be undefined.
  constexpr float kPastInt32 = 2147483648.0f;
  return *index >= kPastInt32 ? std::numeric_limits<std::int32_t>::max()
                              : static_cast<std::int32_t>(*index);
}

}  // namespace dl::csv
