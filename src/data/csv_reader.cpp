#include "data/csv_reader.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "data/parallel_for.hpp"
#include "io/file_access.hpp"

namespace dl {
namespace {

// A CSV file larger than this is not read into memory whole (a wrong path, most likely).
constexpr std::uint64_t kMaxCsvBytes = std::uint64_t{1} << 34;
constexpr const char* kBadRowFix = "fix the row, or set data.onBadFile: skip to leave such rows out";
// The UTF-8 byte order mark that spreadsheet programs write at the start of a CSV export.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
constexpr char kQuote = '"';

std::string read_text(const std::string& path) {
  InputFd input(path, InputRole::kData, kMaxCsvBytes);
  std::string text(static_cast<std::size_t>(input.size()), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(input.fd(), text.data() + done, text.size() - done);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

struct Row {
  std::string_view text;
  std::int64_t line = 0;  // counting from 1
};

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t") == std::string_view::npos;
}

// The data rows after `skip_lines` lines, blank ones left out.
std::vector<Row> data_rows(std::string_view text, int skip_lines) {
  std::vector<Row> rows;
  std::int64_t line = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(start, end - start);
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    ++line;
    if (line > skip_lines && !blank(row)) rows.push_back({row, line});
    start = end + 1;
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
// spaces around it. A quoted number keeps its quotes' "" pairs, which make it no number.
struct Field {
  std::string_view text;
  std::size_t next = 0;
  const char* error = nullptr;
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
  for (;; close += 2) {
    close = row.find(kQuote, close);
    if (close == std::string_view::npos) return {{}, row.size() + 1, "an unterminated quote"};
    if (close + 1 >= row.size() || row[close + 1] != kQuote) break;
  }
  std::size_t after = close + 1;
  while (after < row.size() && (row[after] == ' ' || row[after] == '\t')) ++after;
  if (after < row.size() && row[after] != delimiter)
    return {{}, row.size() + 1, "text after a closing quote"};
  return {row.substr(open + 1, close - open - 1), after + 1, nullptr};
}

// Parses `row` into features (`out`) and its label; the error says what is wrong with it.
std::optional<std::string> parse_row(std::string_view row, const CsvRequest& r, float* out,
                                     std::int32_t& label) {
  const int fields = r.features + 1;
  const int label_field = r.label_index < 0 ? fields - 1 : r.label_index;
  int field = 0;
  int feature = 0;
  for (std::size_t start = 0;; ++field) {
    const Field f = next_field(row, start, r.delimiter);
    if (f.error != nullptr)
      return fmt::format("field {} has {}; close the quote, or write the number unquoted",
                         field + 1, f.error);
    if (field < fields) {
      const std::string_view text = f.text;
      float value = 0.0f;
      const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || error != std::errc() || rest != text.data() + text.size() ||
          !std::isfinite(value))
        return fmt::format("field {} ('{}') is not a finite number", field + 1, text);
      if (field == label_field) {
        if (value != std::floor(value) || value < 0 || value >= static_cast<float>(r.num_classes))
          return fmt::format("the label (field {}) is {}, not a class index from 0 to {}",
                             field + 1, text, r.num_classes - 1);
        label = static_cast<std::int32_t>(value);
      } else {
        out[feature++] = value;
      }
    }
    if (f.next > row.size()) break;
    start = f.next;
  }
  if (field + 1 != fields)
    return fmt::format("{} fields, but inputType's feedForward size {} and the label make {}",
                       field + 1, r.features, fields);
  return std::nullopt;
}

}  // namespace

Dataset read_csv(const CsvRequest& request) {
  const std::string file = read_text(request.path);
  std::string_view text = file;
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark)
    text.remove_prefix(kByteOrderMark.size());
  std::vector<Row> rows = data_rows(text, request.skip_lines);
  if (request.limit > 0 && static_cast<std::size_t>(request.limit) < rows.size())
    rows.resize(static_cast<std::size_t>(request.limit));
  const auto width = static_cast<std::size_t>(request.features);
  std::vector<float> features(rows.size() * width);
  std::vector<std::int32_t> labels(rows.size());
  std::vector<std::optional<std::string>> errors(rows.size());
  parallel_for_each_index(rows.size(), [&](std::size_t i) {
    errors[i] = parse_row(rows[i].text, request, features.data() + i * width, labels[i]);
    return !(errors[i] && request.on_bad_row == BadFileAction::kStop);
  });
  DataOrigin origin;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (errors[i]) {
      const std::string where = fmt::format("{}: line {}", request.path, rows[i].line);
      if (request.on_bad_row == BadFileAction::kStop)
        throw DataError(fmt::format("{}: {}; {}", where, *errors[i], kBadRowFix));
      origin.skipped.push_back(where + ": " + *errors[i]);
      continue;
    }
    if (kept != i) {
      std::copy_n(features.begin() + static_cast<std::ptrdiff_t>(i * width), width,
                  features.begin() + static_cast<std::ptrdiff_t>(kept * width));
      labels[kept] = labels[i];
    }
    ++kept;
  }
  if (kept == 0)
    throw DataError(fmt::format("{}: holds no data rows{}; give one row of numbers per sample",
                                request.path,
                                request.skip_lines > 0
                                    ? fmt::format(" after the {} skipped line(s) (data.skipLines)",
                                                  request.skip_lines)
                                    : std::string()));
  features.resize(kept * width);
  labels.resize(kept);
  Dataset dataset = Dataset::from_features(request.features, std::move(features),
                                           std::move(labels), request.num_classes);
  dataset.set_origin(std::move(origin));
  return dataset;
}

}  // namespace dl
