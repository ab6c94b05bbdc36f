#include "data/csv_text.hpp"

#include <algorithm>

namespace dl::csv {
namespace {

// A line with no value: blanks only, or blanks and delimiters (the empty rows ",,,," a
// spreadsheet writes below its data when cells there were once used).
bool blank(std::string_view row, char delimiter) {
  for (const char c : row)
    if (c != ' ' && c != '\t' && c != delimiter) return false;
  return true;
}

// Where the row ending at `end` is followed by the next one: past its line end, \r\n being one.
std::size_t after_line_end(std::string_view text, std::size_t end) {
  return end + (text.substr(end, 2) == "\r\n" ? 2 : 1);
}

// The rows a text holds at most (its lines), so that their offsets are allocated once: a vector
// grown by doubling holds up to twice and, while it moves, three times what it keeps.
std::size_t most_rows(std::string_view text) {
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  if (lines > 0) return lines + 1;
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\r')) + 1;
}

}  // namespace

RowStarts find_rows(const Text& text, int skip_lines, std::int64_t limit) {
  const std::string_view all = text.text;
  RowStarts rows;
  std::size_t expected = most_rows(all);
  if (limit > 0) expected = std::min(expected, static_cast<std::size_t>(limit));
  rows.data.reserve(expected);
  std::int64_t line = 0;
  for (std::size_t start = 0; start < all.size();) {
    const std::string_view row = row_at(text, start);
    ++line;
    if (!blank(row, text.delimiter)) {
      if (line > skip_lines) {
        if (limit > 0 && rows.data.size() == static_cast<std::size_t>(limit)) break;
        rows.data.push_back(start);
      } else {
        rows.skipped.push_back(start);
      }
    }
    start = after_line_end(all, start + row.size());
  }
  return rows;
}

std::string_view row_at(const Text& text, std::uint64_t start) {
  const std::string_view rest = text.text.substr(start);
  return rest.substr(0, rest.find_first_of("\r\n"));
}

std::int64_t LineCounter::line_at(std::uint64_t start) {
  for (; counted_ < start; ++counted_) {
    const char c = text_[counted_];
    if (c == '\n' || (c == '\r' && (counted_ + 1 == text_.size() || text_[counted_ + 1] != '\n')))
      ++line_;
  }
  return line_;
}

Field next_field(std::string_view row, std::size_t start, char delimiter) {
  std::size_t open = start;
  while (open < row.size() && (row[open] == ' ' || row[open] == '\t')) ++open;
  if (open == row.size() || row[open] != kQuote) {
    std::size_t end = row.find(delimiter, start);
    if (end == std::string_view::npos) end = row.size();
    std::string_view text = row.substr(start, end - start);
    const std::size_t first = text.find_first_not_of(" \t");
    text = first == std::string_view::npos
               ? std::string_view()
               : text.substr(first, text.find_last_not_of(" \t") - first + 1);
    return {text, end + 1, nullptr};
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

std::string unescaped_quotes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == kQuote) ++i;  // next_field found only pairs inside the quotes
  }
  return out;
}

}  // namespace dl::csv
