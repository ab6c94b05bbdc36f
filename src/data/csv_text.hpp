// A CSV file's text cut into rows and fields, for the CSV reader (csv_reader.hpp), which parses
// the rows on the readers' threads. A row ends at a line end outside its quoted fields: \n, \r\n
// or a \r alone (the "CSV (Macintosh)" of older Excel and LibreOffice), as Python's universal
// newlines and pandas read them. A field may be quoted as RFC 4180 quotes it, line breaks
// included (a header cell or a text column written by a spreadsheet); a row is named by the
// line it starts on, every line end counted, those inside quotes too.
//
// What is kept per row is its offset in the text alone (8 bytes): its end and its line number are
// found again where they are wanted (parsing it, a message, predict's line column), so that
// millions of short rows cost little more than their text and their numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dl::csv {

inline constexpr char kQuote = '"';

// A file's text, after any byte order mark, and the delimiter its fields are split at.
struct Text {
  Text(std::string_view all, char field_delimiter)
      : text(all), delimiter(field_delimiter), last_quote(all.rfind(kQuote)) {}
  std::string_view text;
  char delimiter = ',';
  // Where the text's last quote is (npos: none): a quote there or after closes nothing, found
  // without searching the rest of the text for each such stray quote.
  std::size_t last_quote = std::string_view::npos;
};

// Where the rows start (offsets into the text), in order: the data rows, after the `skip_lines`
// lines and with blank rows left out, at most `limit` of them (0: all); and the rows skipped as
// the header lines that hold a value.
struct RowStarts {
  std::vector<std::uint64_t> data;
  std::vector<std::uint64_t> skipped;
};
RowStarts find_rows(const Text& text, int skip_lines, std::int64_t limit);

// The row that starts at `start`, without its line end.
std::string_view row_at(const Text& text, std::uint64_t start);
// The lines a row spans: 1, and one more for each line break in its quoted fields.
std::int64_t row_lines(std::string_view row);

// The line numbers (from 1) of rows asked for in order of their offsets: each counts on from the
// one before, so that numbering every row reads the text once.
class LineCounter {
 public:
  explicit LineCounter(std::string_view text) : text_(text) {}
  std::int64_t line_at(std::uint64_t start);

 private:
  std::string_view text_;
  std::uint64_t counted_ = 0;  // the line ends before this offset are counted in line_
  std::int64_t line_ = 1;
};

// One field of a row, from `start`: RFC 4180's quoting (a field in double quotes may hold the
// delimiter, and "" stands for one quote) around the unquoted rule. `next` is where the next
// field starts (row.size() + 1 after the last); `text` the field without its quotes or the
// spaces around it, with its "" pairs still doubled (`doubled_quotes`): a label is unescaped
// (unescaped_quotes), and a quoted number keeps them, which make it no number.
struct Field {
  std::string_view text;
  std::size_t next = 0;
  const char* error = nullptr;
  bool doubled_quotes = false;
};
Field next_field(std::string_view row, std::size_t start, char delimiter);

// A quoted field's text with each "" pair read as the one quote it stands for.
std::string unescaped_quotes(std::string_view text);

}  // namespace dl::csv
