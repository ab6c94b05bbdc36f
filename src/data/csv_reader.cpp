#include "data/csv_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/message_text.hpp"
#include "data/csv_labels.hpp"
#include "data/csv_text.hpp"
#include "data/parallel_for.hpp"
#include "io/file_access.hpp"

namespace dl {
namespace {

// A CSV file larger than this is not read into memory whole (a wrong path, most likely).
constexpr std::uint64_t kMaxCsvBytes = std::uint64_t{1} << 34;
constexpr const char* kBadRowFix =
    "fix the row, or set data.onBadFile: skip to leave such rows out";
// The UTF-8 byte order mark that spreadsheet programs write at the start of a CSV export.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// A row as a message names it: its text and its line.
struct Row {
  std::string_view text;
  std::int64_t line = 0;  // counting from 1
};

// The label's field in a row, from 0.
int label_field(const CsvRequest& r) {
  return r.label_index < 0 ? r.features : r.label_index;
}

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
std::string_view label_of(const csv::Field& f, std::string& unescaped) {
  if (!f.doubled_quotes) return f.text;
  unescaped = csv::unescaped_quotes(f.text);
  return unescaped;
}

// Parses `row` into features (`out`, unless null: the labels alone are wanted) and its label's
// text, which views the row or, when its quotes had to be unescaped, `unescaped`; the error says
// what is wrong with the row.
std::optional<std::string> parse_row(std::string_view row, const CsvRequest& r, float* out,
                                     std::string_view& label, std::string& unescaped) {
  const int fields = r.features + 1;
  const int label_at = label_field(r);
  int field = 0;
  int feature = 0;
  for (std::size_t start = 0;; ++field) {
    const csv::Field f = csv::next_field(row, start, r.delimiter);
    if (f.error != nullptr)
      return fmt::format("field {} has {}; close the quote, or write the number unquoted",
                         field + 1, f.error);
    if (field == label_at) {
      label = label_of(f, unescaped);
      if (auto problem = label_problem(label, field)) return problem;
    } else if (field < fields) {
      const std::optional<float> value = csv_number(f.text);
      if (!value)
        return fmt::format("field {} ('{}') is not a finite number", field + 1,
                           quoted_value(f.text));
      if (out != nullptr) out[feature++] = *value;
    }
    if (f.next > row.size()) break;
    start = f.next;
  }
  if (field + 1 != fields)
    return fmt::format("{} fields, but inputType's feedForward size {} and the label make {}",
                       field + 1, r.features, fields);
  return std::nullopt;
}

// What a bad row's fields are: how many, which are numbers, the first that is text.
struct RowFields {
  int count = 0;
  int numbers = 0;
  int first_text = -1;
  std::string_view decimal_comma;  // a field such as 6,31 (a ';'-separated export)
};

RowFields row_fields(std::string_view row, char delimiter) {
  RowFields fields;
  for (std::size_t start = 0; start <= row.size(); ++fields.count) {
    const csv::Field f = csv::next_field(row, start, delimiter);
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

// The config mistake that likelier made the file's first data row bad than the row itself, as
// the fix to write instead of "fix the row": a mistake of the file's layout shows on its first
// data row, while a bad row further down is more likely bad itself. The row holds no delimiter
// but another separator; a number has a decimal comma; a header line is read as data (its line
// is the number of lines to skip); the class names are in another field than labelIndex's.
std::optional<std::string> layout_cause(const Row& row, const CsvRequest& r) {
  if (row.text.find(r.delimiter) == std::string_view::npos) {
    char other = 0;
    std::ptrdiff_t most = 0;
    for (const char c : std::string_view(",;\t|")) {
      const std::ptrdiff_t n = std::count(row.text.begin(), row.text.end(), c);
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
  const RowFields fields = row_fields(row.text, r.delimiter);
  if (!fields.decimal_comma.empty())
    return fmt::format(
        "'{}' is written with a decimal comma: save the file with decimal points "
        "(pandas: to_csv(decimal='.'))",
        quoted_value(fields.decimal_comma));
  if (fields.numbers == 0)
    return fmt::format(
        "it reads as a header line (none of its fields is a number): set "
        "data.skipLines: {}",
        row.line);
  if (fields.count == r.features + 1 && fields.numbers == r.features &&
      fields.first_text != label_field(r))
    return fmt::format(
        "field {} is the only text: if it holds the class labels, set "
        "data.labelIndex: {}",
        fields.first_text + 1, fields.first_text);
  return std::nullopt;
}

// What parsing found of a row's label (ParsedRows::labels) before the file's classes are known:
// a class index (>= 0; one past int32 is kept as its largest, no class either way), or one of
// these. With class names (classify_by_name) a row's code becomes its class, or kNoClass.
constexpr std::int32_t kTextLabel = -1;  // not a class index: a class name, or no class
constexpr std::int32_t kBadRow = -2;     // parse_row found it bad (asked again for the message)
constexpr std::int32_t kUnparsed = -3;   // after the first bad row under onBadFile: stop
constexpr std::int32_t kNoClass = -4;    // its label is none of the class names

std::int32_t label_code(std::string_view label) {
  const std::optional<float> index = label_as_index(label);
  if (!index) return kTextLabel;
  constexpr float kPastInt32 = 2147483648.0f;
  return *index >= kPastInt32 ? std::numeric_limits<std::int32_t>::max()
                              : static_cast<std::int32_t>(*index);
}

// The file's rows, parsed on the readers' threads, each into its own slots: its features (when
// kept) and its label's code. Under onBadFile: stop the threads stop at an error, so rows after
// the first bad one may be left unparsed (every row before it is parsed). A row's text, its
// label's text, its line and its error are found again where they are wanted (csv_text.hpp).
struct ParsedRows {
  csv::Text text;
  csv::RowStarts starts;
  std::vector<float> features;
  std::vector<std::int32_t> labels;
};

std::string_view row_text(const ParsedRows& parsed, std::size_t i) {
  return csv::row_at(parsed.text, parsed.starts.data[i]);
}

ParsedRows parse_rows(std::string_view text, const CsvRequest& request, bool keep_features) {
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark)
    text.remove_prefix(kByteOrderMark.size());
  ParsedRows parsed{csv::Text(text, request.delimiter), {}, {}, {}};
  parsed.starts = csv::find_rows(parsed.text, request.skip_lines, request.limit);
  const std::size_t rows = parsed.starts.data.size();
  const std::size_t width = keep_features ? static_cast<std::size_t>(request.features) : 0;
  parsed.features.resize(rows * width);
  parsed.labels.assign(rows, kUnparsed);
  parallel_for_each_index(rows, [&](std::size_t i) {
    float* out = keep_features ? parsed.features.data() + i * width : nullptr;
    std::string_view label;
    std::string unescaped;
    const bool bad = parse_row(row_text(parsed, i), request, out, label, unescaped).has_value();
    parsed.labels[i] = bad ? kBadRow : label_code(label);
    return !(bad && request.on_bad_row == BadFileAction::kStop);
  });
  return parsed;
}

// The text of a good row's label; `scratch` holds it when its quotes had to be unescaped.
std::string_view label_text(std::string_view row, const CsvRequest& r, std::string& scratch) {
  std::size_t start = 0;
  for (int field = 0; field < label_field(r); ++field)
    start = csv::next_field(row, start, r.delimiter).next;
  return label_of(csv::next_field(row, start, r.delimiter), scratch);
}

// The classes: the training file's (given) for any other file, else this file's own labels
// decide (csv_labels.hpp), of the rows that are not bad, up to the first bad one under
// onBadFile: stop (which then stops the read). Too many names for numClasses is a DataError.
std::vector<std::string> file_classes(const ParsedRows& parsed, const CsvRequest& request) {
  if (request.classes) return *request.classes;
  const std::vector<std::int32_t>& codes = parsed.labels;
  const auto end = request.on_bad_row == BadFileAction::kStop
                       ? std::find(codes.begin(), codes.end(), kBadRow)
                       : codes.end();
  // Only a label that is no class index makes the labels names: without one their text is not
  // read again.
  if (std::find(codes.begin(), end, kTextLabel) == end) return {};
  std::vector<std::string_view> labels;
  std::deque<std::string> unescaped;  // the labels whose quotes were unescaped
  std::string scratch;
  for (std::size_t i = 0; i < static_cast<std::size_t>(end - codes.begin()); ++i) {
    if (codes[i] == kBadRow) continue;
    std::string_view label = label_text(row_text(parsed, i), request, scratch);
    if (label.data() == scratch.data()) label = unescaped.emplace_back(scratch);
    labels.push_back(label);
  }
  CsvClasses classes = csv_classes(labels);
  const std::size_t count = classes.names.size();
  if (count <= static_cast<std::size_t>(request.num_classes)) return std::move(classes.names);
  std::size_t row = 0;  // the row of labels[classes.first_name]: the bad rows had no label
  for (std::size_t seen = 0;; ++row)
    if (codes[row] != kBadRow && seen++ == classes.first_name) break;
  throw DataError(fmt::format(
      "{}: the labels name {} classes ({}), more than data.numClasses {} (they are read as "
      "class names because the label '{}' on line {} is not a class index); set "
      "data.numClasses: {}, or give labelIndex the field of the class labels",
      request.path, count, quoted_class_list(classes.names), request.num_classes,
      quoted_value(labels[classes.first_name]),
      csv::LineCounter(parsed.text.text).line_at(parsed.starts.data[row]), count));
}

// With class names, each parsed row's code becomes its class (its label's position among
// `names`) or kNoClass, on the readers' threads; with indices the codes are the classes.
void classify_by_name(ParsedRows& parsed, const CsvRequest& request,
                      const std::vector<std::string>& names) {
  if (names.empty()) return;
  parallel_for_each_index(parsed.labels.size(), [&](std::size_t i) {
    std::int32_t& code = parsed.labels[i];
    if (code == kBadRow || code == kUnparsed) return true;
    std::string scratch;
    const std::optional<int> found =
        find_class(names, label_text(row_text(parsed, i), request, scratch));
    code = found ? *found : kNoClass;
    return true;
  });
}

// What is wrong with row i after classify_by_name: its parse error, or why its label is no class
// under `names` (indices when empty); nothing for a good row, whose text is then not read again.
std::optional<std::string> row_problem(const ParsedRows& parsed, std::size_t i,
                                       const std::vector<std::string>& names, const CsvRequest& r) {
  const std::int32_t code = parsed.labels[i];
  const bool no_class =
      names.empty() ? code == kTextLabel || code >= r.num_classes : code == kNoClass;
  if (code != kBadRow && !no_class) return std::nullopt;
  const std::string_view row = row_text(parsed, i);
  std::string scratch;
  if (code == kBadRow) {
    std::string_view label;
    return parse_row(row, r, nullptr, label, scratch);
  }
  const std::string_view text = label_text(row, r, scratch);
  const int field = label_field(r) + 1;
  if (!names.empty())
    return fmt::format("the label (field {}) '{}' is not one of the {} classes of {} ({})", field,
                       quoted_value(text), names.size(), r.classes_source,
                       quoted_class_list(names));
  return fmt::format("the label (field {}) is {}, not a class index from 0 to {}", field,
                     quoted_value(text), r.num_classes - 1);
}

// The rows that are good, in order: their features (when kept) and labels, and the origin (the
// classes, the rows left out). Bad rows stop the read or are left out, as on_bad_row says.
struct GoodRows {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  DataOrigin origin;
};

GoodRows read_good_rows(const CsvRequest& request, bool keep_features) {
  const std::string file =
      read_input_text(request.path, InputRole::kData, kMaxCsvBytes);  // the rows point into it
  ParsedRows parsed = parse_rows(file, request, keep_features);
  GoodRows good;
  DataOrigin& origin = good.origin;
  origin.class_names = file_classes(parsed, request);
  classify_by_name(parsed, request, origin.class_names);
  if (request.name_lines) origin.sample_sources.column = "line";
  const std::size_t width = keep_features ? static_cast<std::size_t>(request.features) : 0;
  std::vector<std::int32_t>& labels = parsed.labels;
  csv::LineCounter lines(parsed.text.text);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::optional<std::string> error = row_problem(parsed, i, origin.class_names, request);
    if (error) {
      const Row row{row_text(parsed, i), lines.line_at(parsed.starts.data[i])};
      const std::string where = fmt::format("{}: line {}", request.path, row.line);
      // A quote opened by mistake takes the lines up to the next quote into its row.
      if (const std::int64_t spanned = csv::row_lines(row.text); spanned > 1)
        *error +=
            fmt::format(" (its quoted fields carry the row on to line {})", row.line + spanned - 1);
      if (request.on_bad_row == BadFileAction::kStop) {
        const std::optional<std::string> cause =
            labels[i] == kBadRow && i == 0 ? layout_cause(row, request) : std::nullopt;
        throw DataError(fmt::format("{}: {}; {}", where, *error, cause.value_or(kBadRowFix)));
      }
      origin.skipped.push_back(where + ": " + *error);
      continue;
    }
    if (request.name_lines)
      origin.sample_sources.names.push_back(std::to_string(lines.line_at(parsed.starts.data[i])));
    labels[kept] = labels[i];
    if (kept != i)
      std::copy_n(parsed.features.begin() + static_cast<std::ptrdiff_t>(i * width), width,
                  parsed.features.begin() + static_cast<std::ptrdiff_t>(kept * width));
    ++kept;
  }
  if (kept == 0)
    throw DataError(fmt::format(
        "{}: holds no data rows{}; give one row of numbers per sample", request.path,
        request.skip_lines > 0
            ? fmt::format(" after the {} skipped line(s) (data.skipLines)", request.skip_lines)
            : std::string()));
  good.features = std::move(parsed.features);
  good.features.resize(kept * width);
  good.labels = std::move(labels);
  good.labels.resize(kept);
  return good;
}

}  // namespace

Dataset read_csv(const CsvRequest& request) {
  GoodRows good = read_good_rows(request, true);
  Dataset dataset = Dataset::from_features(request.features, std::move(good.features),
                                           std::move(good.labels), request.num_classes);
  dataset.set_origin(std::move(good.origin));
  return dataset;
}

std::vector<std::string> read_csv_classes(const CsvRequest& request) {
  return read_good_rows(request, false).origin.class_names;
}

}  // namespace dl
