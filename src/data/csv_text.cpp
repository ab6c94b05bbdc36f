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

// The line ends in all[from, to): \n, \r\n (one) and a \r alone.
std::int64_t line_ends(std::string_view all, std::size_t from, std::size_t to) {
  std::int64_t ends = 0;
  for (std::size_t i = from; i < to; ++i)
    if (all[i] == '\n' || (all[i] == '\r' && (i + 1 == all.size() || all[i + 1] != '\n'))) ++ends;
  return ends;
}

std::size_t line_end(std::string_view all, std::size_t from) {
  return std::min(all.find_first_of("\r\n", from), all.size());
}

// The quote that closes the field quoted at `open` (the first quote not doubled), or npos.
std::size_t closing_quote(const Text& text, std::size_t open) {
  const std::string_view all = text.text;
  if (open >= text.last_quote) return std::string_view::npos;  // a stray quote: no search
  for (std::size_t close = open + 1;; close += 2) {
    close = all.find(kQuote, close);
    if (close == std::string_view::npos || close + 1 >= all.size() || all[close + 1] != kQuote)
      return close;
  }
}

// Where the row that starts at `start` ends: at the first line end outside its quoted fields
// (RFC 4180: a quoted field may hold line breaks, as pandas and Python's csv read them), and the
// line ends inside them. A quote left open to the end of the text leaves its row ending at the
// quote's line, whose parse then says "an unterminated quote": the rest of the file is still
// read, row by row, as it was before rows could span lines.
struct RowEnd {
  std::size_t end = 0;
  std::int64_t inner_lines = 0;
};

RowEnd row_end(const Text& text, std::size_t start) {
  const std::string_view all = text.text;
  RowEnd row{line_end(all, start), 0};
  // The common row: no quote on its line, so no field of it runs past the line.
  if (all.substr(start, row.end - start).find(kQuote) == std::string_view::npos) return row;
  const char stop_chars[] = {text.delimiter, '\r', '\n'};
  const std::string_view stops(stop_chars, sizeof stop_chars);
  for (std::size_t field = start;;) {
    std::size_t open = field;
    while (open < all.size() && (all[open] == ' ' || all[open] == '\t')) ++open;
    if (open < all.size() && all[open] == kQuote) {
      const std::size_t close = closing_quote(text, open);
      if (close == std::string_view::npos) return {line_end(all, open), row.inner_lines};
      row.inner_lines += line_ends(all, open, close);
      field = close + 1;
    }
    const std::size_t stop = all.find_first_of(stops, field);
    if (stop == std::string_view::npos || all[stop] != text.delimiter)
      return {std::min(stop, all.size()), row.inner_lines};
    field = stop + 1;
  }
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
  std::int64_t line = 1;  // where the row at `start` starts
  for (std::size_t start = 0; start < all.size();) {
    const RowEnd end = row_end(text, start);
    const std::string_view row = all.substr(start, end.end - start);
    // A row that starts within the skipped lines is skipped whole: a header may hold a quoted
    // line break.
    if (!blank(row, text.delimiter)) {
      if (line > skip_lines) {
        if (limit > 0 && rows.data.size() == static_cast<std::size_t>(limit)) break;
        rows.data.push_back(start);
      } else {
        rows.skipped.push_back(start);
      }
    }
    line += 1 + end.inner_lines;
    start = after_line_end(all, end.end);
  }
  return rows;
}

std::string_view row_at(const Text& text, std::uint64_t start) {
  return text.text.substr(start, row_end(text, start).end - start);
}

std::int64_t row_lines(std::string_view row) {
  return 1 + line_ends(row, 0, row.size());
}

std::int64_t LineCounter::line_at(std::uint64_t start) {
  if (start > counted_) line_ += line_ends(text_, counted_, start);
  counted_ = start;
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
