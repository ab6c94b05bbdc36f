// The CSV reader on files written here: plain and quoted fields (RFC 4180, line breaks inside
// quotes included), a spreadsheet's byte order mark, CRLF and CR line ends, the one-line errors
// for a quote left open or text after one, and what reading holds per row.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "allocation_probe.hpp"
#include "core/error.hpp"
#include "csv_test_files.hpp"
#include "data/csv_reader.hpp"
#include "data/data_sources.hpp"

using Catch::Matchers::Contains;

namespace {

using dl::test::csv_request;
using dl::test::write_text;

// ASCII text in UTF-16 or UTF-32, each way round, with and without a byte order mark.
std::string wide_text(const std::string& ascii, int width, bool little_endian, bool mark) {
  std::string out;
  const auto put = [&](unsigned code) {
    for (int b = 0; b < width; ++b) {
      const int shift = 8 * (little_endian ? b : width - 1 - b);
      out.push_back(static_cast<char>((code >> shift) & 0xFF));
    }
  };
  if (mark) put(0xFEFF);
  for (const char c : ascii) put(static_cast<unsigned char>(c));
  return out;
}

}  // namespace

TEST_CASE("csv: quoted fields, a byte order mark and CRLF read as the plain file does", "[csv]") {
  dl::test::TempDir dir;
  const dl::Dataset plain =
      dl::read_csv(csv_request(write_text(dir, "plain.csv", "a,b,label\n0.5,1,2\n-3,4.25,0\n")));
  const dl::Dataset quoted = dl::read_csv(
      csv_request(write_text(dir, "quoted.csv",
                             "\xEF\xBB\xBF\"pixel, a\",\"b \"\"x\"\"\",label\r\n\"0.5\", 1 "
                             ",\"2\"\r\n -3 ,\"4.25\" , 0\r\n")));
  REQUIRE(plain.size() == 2);
  CHECK(plain.features() == std::vector<float>{0.5f, 1.0f, -3.0f, 4.25f});
  CHECK(plain.labels() == std::vector<std::int32_t>{2, 0});
  CHECK(quoted.features() == plain.features());
  CHECK(quoted.labels() == plain.labels());
}

TEST_CASE("csv: a carriage return alone ends a line, as older Excel's CSV (Macintosh)", "[csv]") {
  dl::test::TempDir dir;
  // It was one line: "holds no data rows after the 1 skipped line(s)".
  const dl::Dataset mac =
      dl::read_csv(csv_request(write_text(dir, "mac.csv", "a,b,label\r0.5,1,2\r\r-3,4.25,0\r")));
  CHECK(mac.features() == std::vector<float>{0.5f, 1.0f, -3.0f, 4.25f});
  CHECK(mac.labels() == std::vector<std::int32_t>{2, 0});
  // Lines are counted at each line end, CRLF being one: the bad row is line 4 either way.
  for (const std::string end : {"\r", "\r\n"}) {
    const std::string text = "a,b,label" + end + "1,2,0" + end + end + "1,x,0" + end;
    CHECK_THROWS_WITH(dl::read_csv(csv_request(write_text(dir, "bad.csv", text))),
                      Contains("bad.csv: line 4: field 2 ('x')"));
  }
}

TEST_CASE("csv: a spreadsheet's empty rows (',,' only) are left out as blank lines", "[csv]") {
  dl::test::TempDir dir;
  // They were bad rows: "line 4: field 1 ('') is not a finite number".
  const dl::Dataset rows = dl::read_csv(
      csv_request(write_text(dir, "sheet.csv", "a,b,label\n0.5,1,2\n , ,\n-3,4.25,0\n,,\n,,\r\n")));
  CHECK(rows.features() == std::vector<float>{0.5f, 1.0f, -3.0f, 4.25f});
  CHECK(rows.labels() == std::vector<std::int32_t>{2, 0});
  // A row with one value among empty fields is still a row, and bad.
  CHECK_THROWS_WITH(dl::read_csv(csv_request(write_text(dir, "part.csv", "a,b,label\n,1,\n"))),
                    Contains("part.csv: line 2: "));
}

TEST_CASE("csv: a byte order mark without a header is not part of the first number", "[csv]") {
  dl::test::TempDir dir;
  dl::CsvRequest r = csv_request(write_text(dir, "bom.csv",
                                            "\xEF\xBB\xBF"
                                            "1,2,1\n"));
  r.skip_lines = 0;
  const dl::Dataset d = dl::read_csv(r);
  CHECK(d.features() == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("csv: a file in UTF-16 or UTF-32 is refused naming its encoding and the fix", "[csv]") {
  dl::test::TempDir dir;
  for (const int width : {2, 4}) {
    for (const bool little : {true, false}) {
      for (const bool mark : {true, false}) {
        const std::string encoding =
            std::string(width == 2 ? "UTF-16" : "UTF-32") + (little ? "LE" : "BE");
        INFO(encoding << (mark ? " with" : " without") << " a byte order mark");
        const std::string path =
            write_text(dir, "wide.csv", wide_text("a,b,label\n0.5,1,2\n", width, little, mark));
        try {
          dl::read_csv(csv_request(path));
          FAIL("a wide-text CSV was read");
        } catch (const dl::DataError& e) {
          CHECK(std::string(e.what()) ==
                path + ": is " + encoding + " text" +
                    (width == 2 ? " (as Windows saves \"Unicode\" text)" : "") +
                    ", but a data file is read as UTF-8; save it as UTF-8 (an editor's \"Save "
                    "as\" encoding, or iconv -f " +
                    encoding + " -t UTF-8 FILE > NEW_FILE)");
        }
      }
    }
  }
}

TEST_CASE("csv: a quote left open or text after a closing quote is one line naming the row",
          "[csv]") {
  dl::test::TempDir dir;
  const std::string open = write_text(dir, "open.csv", "h\n1,2,0\n1,\"2,0\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(open)),
                    Contains("open.csv: line 3: field 2 has an unterminated quote") &&
                        Contains("close the quote"));
  const std::string after = write_text(dir, "after.csv", "h\n\"1\"5,2,0\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(after)),
                    Contains("after.csv: line 2: field 1 has text after a closing quote"));
  // A quoted field holding the delimiter is one field, and not a number.
  const std::string comma = write_text(dir, "comma.csv", "h\n\"1,5\",2,0\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(comma)),
                    Contains("line 2: field 1 ('1,5') is not a finite number"));
  dl::CsvRequest skip = csv_request(open);
  skip.on_bad_row = dl::BadFileAction::kSkip;
  CHECK(dl::read_csv(skip).size() == 1);
}

TEST_CASE("csv: a bad first row names the layout mistake that made it bad", "[csv]") {
  dl::test::TempDir dir;
  const auto error = [&](const std::string& text, int skip_lines, char delimiter = ',') {
    dl::CsvRequest r = csv_request(write_text(dir, "layout.csv", text));
    r.skip_lines = skip_lines;
    r.delimiter = delimiter;
    try {
      dl::read_csv(r);
    } catch (const dl::DataError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each was "fix the row, or set data.onBadFile: skip", which leaves every row out.
  CHECK_THAT(
      error("a;b;label\n0.5;1;2\n", 1),
      Contains("line 2: field 1 ('0.5;1;2')") &&
          Contains("the row holds no ',' (data.delimiter) but 2 ';': set data.delimiter: \";\""));
  CHECK_THAT(error("a\tb\tlabel\n0.5\t1\t2\n", 0),
             Contains("line 1:") && Contains("set data.delimiter: \"\\t\""));
  CHECK_THAT(error("\n# measurements\na,b,label\n0.5,1,2\n", 2),
             Contains("line 3:") && Contains("it reads as a header line") &&
                 Contains("set data.skipLines: 3"));
  CHECK_THAT(error("a;b;label\n0,5;1;2\n", 1, ';'),
             Contains("'0,5' is written with a decimal comma"));
  CHECK_THAT(error("a,b,label\n0.5,1,9\n", 1),
             Contains("is 9, not a class index") && Contains("fix the row"));
  CHECK_THAT(error("label,a,b\nsetosa,0.5,1\n", 1),
             Contains("field 1 is the only text: if it holds the class labels, set "
                      "data.labelIndex: 0"));
  // A file of another width than the input (csv_request: 2 features): every row is bad, and the
  // count to give inputType is the file's, with a class name as the label too.
  const std::string wider =
      "the file's rows hold 3 values besides the label where the config asks for 2: give "
      "inputType 3 values (feedForward: {size: 3}, or convolutionalFlat with height x width x "
      "channels = 3)";
  CHECK_THAT(error("a,b,c,label\n0.5,1,2,0\n", 1), Contains("line 2: 4 fields") && Contains(wider));
  CHECK_THAT(error("a,b,c,label\n0.5,1,2,setosa\n", 1), Contains(wider));
  CHECK_THAT(error("a,b,c,label\n0.5,1,2,0\n0.5,1,2,0\n0.5,1,2\n", 1), Contains(wider));
  CHECK_THAT(error("label\n0\n", 1),
             Contains("line 2: 1 fields") && Contains("rows hold 0 values besides the label"));
  // A delimiter at each row's end was advised as one more input value, then as an empty label.
  CHECK_THAT(error("a,b,label,\n0.5,1,2,\n", 1),
             Contains("line 2: 4 fields") &&
                 Contains("the row ends with ',' (an empty last field): remove the delimiter at "
                          "the end of the rows"));
  CHECK_THAT(error("0.5  1 2\n", 0, ' '), Contains("its columns are aligned with runs of spaces"));
  // Further down, a row is more likely bad itself.
  CHECK_THAT(error("a,b,label\n0.5,1,2\nx,y,z\n", 1),
             Contains("line 3:") && Contains("fix the row, or set data.onBadFile: skip"));
}

TEST_CASE("csv: every row bad under onBadFile: skip names the first and its fix", "[csv]") {
  dl::test::TempDir dir;
  // A file saved with ';' read with ',': "holds no data rows", no word of the delimiter.
  dl::CsvRequest r = csv_request(write_text(dir, "semi.csv", "a;b;label\n0.5;1;2\n1;2;0\n"));
  r.on_bad_row = dl::BadFileAction::kSkip;
  CHECK_THROWS_WITH(dl::read_csv(r),
                    Contains("semi.csv: none of its 2 rows is usable (data.onBadFile: skip left "
                             "every one out); the first, line 2: field 1 ('0.5;1;2')") &&
                        Contains("set data.delimiter: \";\""));
}

TEST_CASE("csv: the rows left out under onBadFile: skip are listed by one rule", "[csv]") {
  dl::test::TempDir dir;
  dl::CsvRequest r = csv_request(write_text(dir, "skip.csv", "a,b,label\n1,2,0\n1,x,0\n3,4\n"));
  r.on_bad_row = dl::BadFileAction::kSkip;
  const dl::Dataset set = dl::read_csv(r);
  const std::vector<std::string> listed = dl::skipped_notes(set.origin(), "SRC", "; why");
  REQUIRE(listed.size() == 3);
  CHECK(listed[0] == "skipped 2 in SRC (data.onBadFile: skip); why");
  CHECK_THAT(listed[1], Contains("  skipped " + r.path + ": line 3: field 2 ('x')"));
  CHECK_THAT(listed[2], Contains("  skipped " + r.path + ": line 4: 2 fields"));
  // The log's notes end with the same lines, the count line ended by a colon.
  std::vector<std::string> notes = dl::origin_notes(set, "SRC");
  REQUIRE(notes.size() == 3);
  CHECK(notes[0] == "skipped 2 in SRC (data.onBadFile: skip):");
  CHECK(std::vector<std::string>(notes.begin() + 1, notes.end()) ==
        std::vector<std::string>(listed.begin() + 1, listed.end()));
  r.on_bad_row = dl::BadFileAction::kStop;
  r.path = write_text(dir, "good.csv", "a,b,label\n1,2,0\n");
  CHECK(dl::skipped_notes(dl::read_csv(r).origin(), "SRC").empty());
}

TEST_CASE("csv: reading holds little per row besides the file's text and the samples", "[csv]") {
  // Millions of short rows are where it shows: it held 112 bytes a row more (each row's text and
  // line, its label's text, an unescaped copy and an error slot), more than the rows' own text.
  constexpr std::size_t kRows = 100000;
  std::string text = "a,b,label\n";
  for (std::size_t i = 0; i < kRows; ++i)
    text += std::to_string(i % 7) + ",2.5," + std::to_string(i % 3) + "\n";
  dl::test::TempDir dir;
  const dl::CsvRequest r = csv_request(write_text(dir, "short_rows.csv", text));
  const std::size_t before = dl::test::live_bytes();
  dl::test::reset_peak_live_bytes();
  {
    const dl::Dataset set = dl::read_csv(r);
    REQUIRE(set.size() == kRows);
    CHECK(set.labels()[4] == 1);
    CHECK(set.features()[8] == 4.0f);
  }
  const std::size_t held = dl::test::peak_live_bytes() - before;
  const std::size_t data = text.size() + kRows * (2 * sizeof(float) + sizeof(std::int32_t));
  INFO("held " << held << " bytes for " << data << " bytes of text and samples");
  CHECK(held <= data + kRows * 16);
}

TEST_CASE("csv: a quoted field may hold line breaks (RFC 4180); lines are counted through it",
          "[csv]") {
  dl::test::TempDir dir;
  // A header cell with a line break is one header row: it read as "an unterminated quote" on
  // line 1 (skipped) and a bad row 'first"' on line 2. Each line end counts, \r\n as one.
  for (const std::string end : {"\n", "\r\n", "\r"}) {
    INFO("line end " << (end == "\n" ? "LF" : end == "\r\n" ? "CRLF" : "CR"));
    const std::string header = "\"pixel" + end + "first\",\"b, " + end + end + "\",label" + end;
    const dl::Dataset set = dl::read_csv(
        csv_request(write_text(dir, "header.csv", header + "0.5,1,2" + end + "-3,4.25,0" + end)));
    CHECK(set.features() == std::vector<float>{0.5f, 1.0f, -3.0f, 4.25f});
    CHECK(set.labels() == std::vector<std::int32_t>{2, 0});
    CHECK_THROWS_WITH(
        dl::read_csv(csv_request(write_text(dir, "bad.csv", header + "1,2,0" + end + "1,x,0"))),
        Contains("bad.csv: line 6: field 2 ('x')"));
  }
  // The delimiter and "" inside such a field are its own, and a number with a line break is
  // no number: the row is bad, named by the line it starts on.
  const std::string number =
      write_text(dir, "number.csv", "a,b,label\n1,\"2\n\",0\n3,4,1\n\"5,\"\"\n6\",7,1\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(number)),
                    Contains("number.csv: line 2: field 2 ('2\\n') is not a finite number"));
  dl::CsvRequest skip = csv_request(number);
  skip.on_bad_row = dl::BadFileAction::kSkip;
  skip.name_lines = true;
  const dl::Dataset kept = dl::read_csv(skip);
  CHECK(kept.features() == std::vector<float>{3.0f, 4.0f});
  CHECK(kept.origin().sample_sources.names == std::vector<std::string>{"4"});
  REQUIRE(kept.origin().skipped.size() == 2);
  CHECK_THAT(kept.origin().skipped[0], Contains("number.csv: line 2: field 2 ('2\\n')"));
  CHECK_THAT(kept.origin().skipped[1],
             Contains("number.csv: line 5: field 1 ('5,\"\"\\n6') is not a "
                      "finite number (its quoted fields "
                      "carry the row on to line 6)"));
}

TEST_CASE("csv: a text field with a line break is one bad row, the rows after it read on",
          "[csv]") {
  dl::test::TempDir dir;
  // A quoted label with a line break (a comment column read as the label, say) is no class name;
  // the rows after it keep their lines (predict's line column).
  const std::string path = write_text(
      dir, "note.csv", "a,b,label\n1,2,\"a note\nover\n three lines\"\n3,4,1\n5,6,2\n\n7,x,0\n");
  CHECK_THROWS_WITH(
      dl::read_csv(csv_request(path)),
      Contains("note.csv: line 2: the label (field 3) 'a note\\nover\\n three lines' is not UTF-8 "
               "text without control characters"));
  dl::CsvRequest skip = csv_request(path);
  skip.on_bad_row = dl::BadFileAction::kSkip;
  skip.name_lines = true;
  const dl::Dataset set = dl::read_csv(skip);
  CHECK(set.labels() == std::vector<std::int32_t>{1, 2});
  CHECK(set.origin().sample_sources.names == std::vector<std::string>{"5", "6"});
  REQUIRE(set.origin().skipped.size() == 2);
  CHECK_THAT(set.origin().skipped[1], Contains("note.csv: line 8: field 2 ('x')"));
  // A stray quote takes the lines up to the next quote into its row, as pandas reads it: the
  // message says how far.
  const std::string stray = write_text(dir, "stray.csv", "h\n1,\"2,0\n3,4,\"1\"\n5,6,0\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(stray)),
                    Contains("stray.csv: line 2: field 2 has text after a closing quote") &&
                        Contains("(its quoted fields carry the row on to line 3)"));
  // A quote left open to the end of the file still ends its row at its line: that row is bad,
  // the rows after it are read.
  const std::string open = write_text(dir, "open.csv", "h\n1,\"2,0\n3,4,1\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(open)),
                    Contains("open.csv: line 2: field 2 has an unterminated quote"));
  skip.path = open;
  CHECK(dl::read_csv(skip).origin().sample_sources.names == std::vector<std::string>{"3"});
}

TEST_CASE("csv: a skipped line that reads as a data row is named in a note, not refused", "[csv]") {
  dl::test::TempDir dir;
  const auto notes = [&](const std::string& text, int skip_lines = 1, int num_classes = 3) {
    dl::CsvRequest r = csv_request(write_text(dir, "rows.csv", text));
    r.skip_lines = skip_lines;
    r.num_classes = num_classes;
    return dl::read_csv(r).origin().notes;
  };
  using Notes = std::vector<std::string>;
  const std::string path = dir.file("rows.csv");
  // skipLines: 1 on a file without a header left its first row out silently.
  CHECK(notes("1,2,0\n3,4.5,1\n") ==
        Notes{path +
              ": line 1, skipped as a header (data.skipLines: 1), reads as a data row like the "
              "rows after it, and is left out; if the file has no header, set data.skipLines: 0"});
  CHECK(notes("# measurements\n1,2,0\n3,4,1\n5,6,2\n", 3) ==
        Notes{path +
              ": lines 2 to 3, skipped as a header (data.skipLines: 3), read as data rows like "
              "the rows after them, and are left out; if they are data, set data.skipLines: 1"});
  // Text labels: the skipped row's label must be one of the file's classes.
  CHECK(notes("5.1,3.5,setosa\n4.9,3,setosa\n6,2.2,virginica\n").size() == 1);
  // A header: names, a label that is no class, or the column numbers pandas writes for a
  // frame without column names (0,1,2 or 1,2,3).
  CHECK(notes("a,b,label\n1,2,0\n").empty());
  CHECK(notes("1,2,7\n1,2,0\n").empty());
  CHECK(notes("x,y,species\n5.1,3.5,setosa\n").empty());
  CHECK(notes("0,1,2\n1,2,0\n").empty());
  CHECK(notes("1,2,3\n1,2,0\n", 1, 10).empty());
  CHECK(notes("1,2,4\n1,2,0\n", 1, 10).size() == 1);
  CHECK(notes("1,2,0\n3,4,1\n", 0).empty());
  // Under onBadFile: stop, a bad skipped line is no data row either.
  CHECK(notes("1,x,0\n3,4,1\n").empty());
}
