#include "data/csv_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/message_text.hpp"
#include "data/csv_labels.hpp"
#include "data/csv_row.hpp"

namespace dl::csv {
namespace {

// What a bad row's fields are: how many, which are numbers, the first that is text.
struct RowFields {
  int count = 0;
  int numbers = 0;
  int first_text = -1;
  int empty = 0;                   // fields with nothing in them
  bool last_empty = false;         // the row ends with the delimiter
  std::string_view decimal_comma;  // a field such as 6,31 (a ';'-separated export)
};

RowFields row_fields(std::string_view row, char delimiter) {
  RowFields fields;
  for (std::size_t start = 0; start <= row.size(); ++fields.count) {
    const Field f = next_field(row, start, delimiter);
    fields.empty += f.text.empty() ? 1 : 0;
    fields.last_empty = f.text.empty();
    if (csv_number(f.text)) {
      ++fields.numbers;
    } else {
      if (fields.first_text < 0) fields.first_text = fields.count;
      const std::size_t comma = f.text.find(',');
      if (fields.decimal_comma.empty() && comma != std::string_view::npos && comma > 0 &&
          csv_number(std::string(f.text).replace(comma, 1, ".")))
        fields.decimal_comma = f.text;
    }
    start = f.next;
  }
  return fields;
}

// Whether `row` is the column numbers pandas writes as the header of a frame without column
// names: 0,1,2,... or 1,2,3,... (which may read as a row of numbers with a class index).
bool column_numbers(std::string_view row, char delimiter) {
  const std::string_view head = next_field(row, 0, delimiter).text;
  if (head != "0" && head != "1") return false;
  int column = head == "0" ? 0 : 1;
  for (std::size_t start = 0; start <= row.size(); ++column) {
    const Field f = next_field(row, start, delimiter);
    if (f.text != std::to_string(column)) return false;
    start = f.next;
  }
  return true;
}

// Whether a skipped row reads as a data row of the file: it parses as one, its label is one of
// the file's classes (`names`; indices when empty), and it is not pandas' column numbers.
bool reads_as_data(std::string_view row, const CsvRequest& r,
                   const std::vector<std::string>& names) {
  std::string_view label;
  std::string unescaped;
  if (parse_row(row, r, nullptr, label, unescaped)) return false;
  const std::int32_t code = label_code(label);
  const bool a_class =
      names.empty() ? code >= 0 && code < r.num_classes : find_class(names, label).has_value();
  return a_class && !column_numbers(row, r.delimiter);
}

}  // namespace

// The config mistake that likelier made the file's first data row bad than the row itself, as
// the fix to write instead of "fix the row": a mistake of the file's layout shows on its first
// data row, while a bad row further down is more likely bad itself. The row holds no delimiter
// but another separator; a number has a decimal comma; a header line is read as data (its line
// is the number of lines to skip); the rows are another width than the config's input; the class
// names are in another field than labelIndex's.
std::optional<std::string> layout_cause(std::string_view row, std::int64_t line,
                                        const CsvRequest& r) {
  if (row.find(r.delimiter) == std::string_view::npos) {
    char other = 0;
    std::ptrdiff_t most = 0;
    for (const char c : std::string_view(",;\t|")) {
      const std::ptrdiff_t n = std::count(row.begin(), row.end(), c);
      if (c == r.delimiter || n <= most) continue;
      other = c;
      most = n;
    }
    if (other != 0)
      return fmt::format(
          "the row holds no '{}' (data.delimiter) but {} '{}': set data.delimiter: \"{}\"",
          quoted_value(std::string(1, r.delimiter)), most, quoted_value(std::string(1, other)),
          quoted_value(std::string(1, other)));
  }
  const RowFields fields = row_fields(row, r.delimiter);
  if (!fields.decimal_comma.empty())
    return fmt::format(
        "'{}' is written with a decimal comma: save the file with decimal points "
        "(pandas: to_csv(decimal='.'))",
        quoted_value(fields.decimal_comma));
  if (fields.numbers == 0)
    return fmt::format(
        "it reads as a header line (none of its fields is a number): set "
        "data.skipLines: {}",
        line);
  // Empty fields among numbers: a delimiter at each row's end (some exporters write one), or
  // columns aligned with runs of spaces; the width advice below would count them as values.
  const std::string delimiter = quoted_value(std::string(1, r.delimiter));
  if (fields.empty == 1 && fields.last_empty && fields.numbers >= fields.count - 2)
    return fmt::format(
        "the row ends with '{}' (an empty last field): remove the delimiter at the end of the rows",
        delimiter);
  if (fields.empty > 0 && r.delimiter == ' ')
    return "its columns are aligned with runs of spaces (empty fields between them): separate "
           "the fields with one delimiter, a tab say, and set data.delimiter to it (\"\\t\")";
  // Numbers in every field but perhaps the label's (a class name): the file's rows are another
  // width than the config's input.
  if (fields.count != r.features + 1 && fields.numbers >= fields.count - 1)
    return fmt::format(
        "the file's rows hold {} values besides the label where the config asks for {}: give "
        "inputType {} values (feedForward: {{size: {}}}, or convolutionalFlat with height x "
        "width x channels = {})",
        fields.count - 1, r.features, fields.count - 1, fields.count - 1, fields.count - 1);
  if (fields.count == r.features + 1 && fields.numbers == r.features &&
      fields.first_text != label_field(r))
    return fmt::format(
        "field {} is the only text: if it holds the class labels, set "
        "data.labelIndex: {}",
        fields.first_text + 1, fields.first_text);
  return std::nullopt;
}

// skipLines on a file without a header leaves its first rows out, and nothing said so: the note
// naming the skipped lines just before the data that read as data rows, and the fix, or nothing.
// A note, not an error: a header of numbers is possible, and the rows are the user's to judge.
std::optional<std::string> skipped_data_note(const Text& text,
                                             const std::vector<std::uint64_t>& skipped,
                                             const CsvRequest& r,
                                             const std::vector<std::string>& names) {
  std::size_t first = skipped.size();
  while (first > 0 && reads_as_data(row_at(text, skipped[first - 1]), r, names)) --first;
  if (first == skipped.size()) return std::nullopt;
  LineCounter lines(text.text);
  const std::int64_t from = lines.line_at(skipped[first]);
  const std::int64_t to = lines.line_at(skipped.back());
  const bool one = from == to;
  return fmt::format(
      "{}: {}, skipped as a header (data.skipLines: {}), {} like the rows after {}, and {} left "
      "out; {}, set data.skipLines: {}",
      r.path, one ? fmt::format("line {}", from) : fmt::format("lines {} to {}", from, to),
      r.skip_lines, one ? "reads as a data row" : "read as data rows", one ? "it" : "them",
      one ? "is" : "are",
      from == 1 ? "if the file has no header"
      : one     ? "if it is data"
                : "if they are data",
      from - 1);
}

}  // namespace dl::csv
