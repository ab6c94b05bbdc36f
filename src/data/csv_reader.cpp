#include "data/csv_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/message_text.hpp"
#include "data/csv_labels.hpp"
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
constexpr char kQuote = '"';

struct Row {
  std::string_view text;
  std::int64_t line = 0;  // counting from 1
};

// A line with no value: blanks only, or blanks and delimiters (the empty rows ",,,," a
// spreadsheet writes below its data when cells there were once used).
bool blank(std::string_view text, char delimiter) {
  for (const char c : text)
    if (c != ' ' && c != '\t' && c != delimiter) return false;
  return true;
}

// The data rows after `skip_lines` lines, blank ones left out. A line ends with \n, \r\n or a
// \r alone (the "CSV (Macintosh)" of older Excel and LibreOffice), as Python's universal
// newlines and pandas read them: the file was otherwise one line, "no data rows".
std::vector<Row> data_rows(std::string_view text, int skip_lines, char delimiter) {
  std::vector<Row> rows;
  std::int64_t line = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view row = text.substr(start, end - start);
    ++line;
    if (line > skip_lines && !blank(row, delimiter)) rows.push_back({row, line});
    start = end + (text.substr(end, 2) == "\r\n" ? 2 : 1);
  }
  return rows;
}

std::string_view trimmed(std::string_view field) {
  const std::size_t first = field.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return field.substr(first, field.find_last_not_of(" \t") - first + 1);
}

// One field of a row, from `start`: RFC 4180's quoting (a field in double quotes may hold the
// delimiter, and "" stands for one quote) around the unquoted rule. `next` is where the next
// field starts (row.size() + 1 after the last); `text` the field without its quotes or the
// spaces around it, with its "" pairs still doubled (`doubled_quotes`): a label is unescaped
// (unescaped_label), and a quoted number keeps them, which make it no number.
struct Field {
  std::string_view text;
  std::size_t next = 0;
  const char* error = nullptr;
  bool doubled_quotes = false;
};

Field next_field(std::string_view row, std::size_t start, char delimiter) {
  std::size_t open = start;
  while (open < row.size() && (row[open] == ' ' || row[open] == '\t')) ++open;
  if (open == row.size() || row[open] != kQuote) {
    std::size_t end = row.find(delimiter, start);
    if (end == std::string_view::npos) end = row.size();
    return {trimmed(row.substr(start, end - start)), end + 1, nullptr};
  }
  std::size_t close = open + 1;
  bool doubled = false;
  for (;; close += 2) {
    close = row.find(kQuote, close);
    if (close == std::string_view::npos) return {{}, row.size() + 1, "an unterminated quote"};
    if (close + 1 >= row.size() || row[close + 1] != kQuote) break;
    doubled = true;
  }
  std::size_t after = close + 1;
  while (after < row.size() && (row[after] == ' ' || row[after] == '\t')) ++after;
  if (after < row.size() && row[after] != delimiter)
    return {{}, row.size() + 1, "text after a closing quote"};
  return {row.substr(open + 1, close - open - 1), after + 1, nullptr, doubled};
}

// A quoted field's text with each "" pair read as the one quote it stands for.
std::string unescaped_label(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == kQuote) ++i;  // next_field found only pairs inside the quotes
  }
  return out;
}

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
    const Field f = next_field(row, start, r.delimiter);
    if (f.error != nullptr)
      return fmt::format("field {} has {}; close the quote, or write the number unquoted",
                         field + 1, f.error);
    if (field == label_at) {
      label = f.text;
      if (f.doubled_quotes) {
        unescaped = unescaped_label(f.text);
        label = unescaped;
      }
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
    const Field f = next_field(row, start, delimiter);
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

// The file's rows, parsed on the readers' threads: each row's features (when kept), label text
// and error. Under onBadFile: stop the threads stop at an error, so rows after the first bad one
// may be left unparsed (every row before it is parsed).
struct ParsedRows {
  std::vector<Row> rows;
  std::vector<float> features;
  std::vector<std::string_view> labels;
  std::vector<std::string> unescaped_labels;  // the labels that had "" pairs (parse_row)
  std::vector<std::optional<std::string>> errors;
};

ParsedRows parse_rows(std::string_view text, const CsvRequest& request, bool keep_features) {
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark)
    text.remove_prefix(kByteOrderMark.size());
  ParsedRows parsed;
  parsed.rows = data_rows(text, request.skip_lines, request.delimiter);
  std::vector<Row>& rows = parsed.rows;
  if (request.limit > 0 && static_cast<std::size_t>(request.limit) < rows.size())
    rows.resize(static_cast<std::size_t>(request.limit));
  const std::size_t width = keep_features ? static_cast<std::size_t>(request.features) : 0;
  parsed.features.resize(rows.size() * width);
  parsed.labels.resize(rows.size());
  parsed.unescaped_labels.resize(rows.size());
  parsed.errors.resize(rows.size());
  parallel_for_each_index(rows.size(), [&](std::size_t i) {
    float* out = keep_features ? parsed.features.data() + i * width : nullptr;
    parsed.errors[i] =
        parse_row(rows[i].text, request, out, parsed.labels[i], parsed.unescaped_labels[i]);
    return !(parsed.errors[i] && request.on_bad_row == BadFileAction::kStop);
  });
  return parsed;
}

// The classes: the training file's (given) for any other file, else this file's own labels
// decide (csv_labels.hpp), of the rows that are not bad, up to the first bad one under
// onBadFile: stop (which then stops the read). Too many names for numClasses is a DataError.
std::vector<std::string> file_classes(const ParsedRows& parsed, const CsvRequest& request) {
  if (request.classes) return *request.classes;
  std::vector<std::string_view> labels;
  std::vector<std::int64_t> lines;
  for (std::size_t i = 0; i < parsed.rows.size(); ++i) {
    if (parsed.errors[i]) {
      if (request.on_bad_row == BadFileAction::kStop) break;
      continue;
    }
    labels.push_back(parsed.labels[i]);
    lines.push_back(parsed.rows[i].line);
  }
  CsvClasses classes = csv_classes(labels);
  const std::size_t count = classes.names.size();
  if (count > static_cast<std::size_t>(request.num_classes))
    throw DataError(fmt::format(
        "{}: the labels name {} classes ({}), more than data.numClasses {} (they are read as "
        "class names because the label '{}' on line {} is not a class index); set "
        "data.numClasses: {}, or give labelIndex the field of the class labels",
        request.path, count, quoted_class_list(classes.names), request.num_classes,
        quoted_value(labels[classes.first_name]), lines[classes.first_name], count));
  return std::move(classes.names);
}

// The class of a label under `names` (indices when empty); the error says why it has none.
std::optional<std::string> class_of(std::string_view text, const std::vector<std::string>& names,
                                    const CsvRequest& r, std::int32_t& label) {
  const int field = label_field(r) + 1;
  if (!names.empty()) {
    const std::optional<int> found = find_class(names, text);
    if (found) {
      label = *found;
      return std::nullopt;
    }
    return fmt::format("the label (field {}) '{}' is not one of the {} classes of {} ({})", field,
                       quoted_value(text), names.size(), r.classes_source,
                       quoted_class_list(names));
  }
  const std::optional<float> index = label_as_index(text);
  if (!index || *index >= static_cast<float>(r.num_classes))
    return fmt::format("the label (field {}) is {}, not a class index from 0 to {}", field,
                       quoted_value(text), r.num_classes - 1);
  label = static_cast<std::int32_t>(*index);
  return std::nullopt;
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
  if (request.name_lines) origin.sample_sources.column = "line";
  const std::size_t width = keep_features ? static_cast<std::size_t>(request.features) : 0;
  std::vector<std::int32_t>& labels = good.labels;
  labels.resize(parsed.rows.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < parsed.rows.size(); ++i) {
    const bool row_error = parsed.errors[i].has_value();
    std::optional<std::string> error = std::move(parsed.errors[i]);
    if (!error) error = class_of(parsed.labels[i], origin.class_names, request, labels[kept]);
    if (error) {
      const std::string where = fmt::format("{}: line {}", request.path, parsed.rows[i].line);
      if (request.on_bad_row == BadFileAction::kStop) {
        const std::optional<std::string> cause =
            row_error && i == 0 ? layout_cause(parsed.rows[i], request) : std::nullopt;
        throw DataError(fmt::format("{}: {}; {}", where, *error, cause.value_or(kBadRowFix)));
      }
      origin.skipped.push_back(where + ": " + *error);
      continue;
    }
    if (request.name_lines)
      origin.sample_sources.names.push_back(std::to_string(parsed.rows[i].line));
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
  labels.resize(kept);
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
