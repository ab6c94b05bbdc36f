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
#include "data/csv_layout.hpp"
#include "data/csv_row.hpp"
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

using csv::kBadRow;
using csv::kNoClass;
using csv::kTextLabel;
using csv::kUnparsed;
using csv::label_code;
using csv::label_field;
using csv::label_text;
using csv::parse_row;

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

// The line of labels[k], the k-th label of the rows that are not bad (the bad rows had no label).
std::size_t label_line(const ParsedRows& parsed, std::size_t k) {
  const std::vector<std::int32_t>& codes = parsed.labels;
  std::size_t row = 0;
  for (std::size_t seen = 0;; ++row)
    if (codes[row] != kBadRow && seen++ == k) break;
  return csv::LineCounter(parsed.text.text).line_at(parsed.starts.data[row]);
}

// The classes: the training file's (given) for any other file, else this file's own labels
// decide (csv_labels.hpp), of the rows that are not bad, up to the first bad one under
// onBadFile: stop (which then stops the read). Too many names for numClasses is a DataError;
// names that a few labels made of labels mostly indices get a note in `notes` (one stray "1.5"
// among 0, 1 and 2 renumbers the classes by their text, which training would never say).
std::vector<std::string> file_classes(const ParsedRows& parsed, const CsvRequest& request,
                                      std::vector<std::string>& notes) {
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
  const std::string made_names =
      fmt::format("the label '{}' on line {} is not a class index",
                  quoted_value(labels[classes.first_name]), label_line(parsed, classes.first_name));
  if (count > static_cast<std::size_t>(request.num_classes))
    throw DataError(fmt::format(
        "{}: the labels name {} classes ({}), more than data.numClasses {} (they are read as "
        "class names because {}); set data.numClasses: {}, or give labelIndex the field of the "
        "class labels",
        request.path, count, quoted_class_list(classes.names), request.num_classes, made_names,
        count));
  if (2 * classes.index_labels > labels.size())
    notes.push_back(fmt::format(
        "{}: {} of its {} labels are class indices, but {}, so every label is read as a class "
        "name, the classes in text order ({}); if the labels are class indices, fix that row",
        request.path, classes.index_labels, labels.size(), made_names,
        quoted_class_list(classes.names)));
  return std::move(classes.names);
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
  origin.class_names = file_classes(parsed, request, origin.notes);
  classify_by_name(parsed, request, origin.class_names);
  if (request.name_lines) origin.sample_sources.column = "line";
  const std::size_t width = keep_features ? static_cast<std::size_t>(request.features) : 0;
  std::vector<std::int32_t>& labels = parsed.labels;
  csv::LineCounter lines(parsed.text.text);
  std::size_t kept = 0;
  std::string first_bad;  // under onBadFile: skip, the first row left out, with its fix
  for (std::size_t i = 0; i < labels.size(); ++i) {
    std::optional<std::string> error = row_problem(parsed, i, origin.class_names, request);
    if (error) {
      const std::string_view row = row_text(parsed, i);
      const std::int64_t line = lines.line_at(parsed.starts.data[i]);
      const std::string where = fmt::format("{}: line {}", request.path, line);
      // A quote opened by mistake takes the lines up to the next quote into its row.
      if (const std::int64_t spanned = csv::row_lines(row); spanned > 1)
        *error +=
            fmt::format(" (its quoted fields carry the row on to line {})", line + spanned - 1);
      const std::optional<std::string> cause =
          labels[i] == kBadRow && i == 0 ? csv::layout_cause(row, line, request) : std::nullopt;
      if (request.on_bad_row == BadFileAction::kStop)
        throw DataError(fmt::format("{}: {}; {}", where, *error, cause.value_or(kBadRowFix)));
      if (origin.skipped.empty())
        first_bad = fmt::format("line {}: {}; {}", line, *error, cause.value_or("fix the rows"));
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
  // Every row bad (a file saved with another delimiter, say): the first one's cause, not "no rows".
  if (kept == 0 && !origin.skipped.empty())
    throw DataError(
        fmt::format("{}: none of its {} rows is usable (data.onBadFile: skip left every one out); "
                    "the first, {}",
                    request.path, origin.skipped.size(), first_bad));
  if (kept == 0)
    throw DataError(fmt::format(
        "{}: holds no data rows{}; give one row of numbers per sample", request.path,
        request.skip_lines > 0
            ? fmt::format(" after the {} skipped line(s) (data.skipLines)", request.skip_lines)
            : std::string()));
  if (std::optional<std::string> note =
          csv::skipped_data_note(parsed.text, parsed.starts.skipped, request, origin.class_names))
    origin.notes.push_back(std::move(*note));
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
