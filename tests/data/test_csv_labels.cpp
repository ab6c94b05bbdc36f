// A CSV file's label column (csv_labels.hpp): class indices when every training label is a
// non-negative whole number, else class names (the distinct labels in byte order); the test file
// read with the training file's classes; the one-line errors for a label that is no class.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "csv_test_files.hpp"
#include "data/csv_labels.hpp"
#include "data/csv_reader.hpp"

using Catch::Matchers::Contains;

namespace {

using Names = std::vector<std::string>;

using dl::test::csv_request;
using dl::test::write_text;

// The training file's classes, then `path` read with them, as the test split reads its file.
dl::Dataset read_with_training_classes(const std::string& train, const std::string& path,
                                       dl::BadFileAction action = dl::BadFileAction::kStop) {
  dl::CsvRequest r = csv_request(path);
  r.classes = dl::read_csv_classes(csv_request(train));
  r.classes_source = "the training file " + train;
  r.on_bad_row = action;
  return dl::read_csv(r);
}

}  // namespace

TEST_CASE("csv numbers: what Python's float() and pandas read, finite, + sign included",
          "[csv][labels]") {
  const std::vector<std::pair<std::string_view, float>> numbers{
      {"2", 2.0f},  {"+2", 2.0f},  {"-2", -2.0f},   {"+.5", 0.5f},  {".5", 0.5f},
      {"4.", 4.0f}, {"-0", -0.0f}, {"1e-3", 1e-3f}, {"1E+3", 1e3f}, {"+1.5e2", 150.0f}};
  for (const auto& [text, value] : numbers) {
    INFO(text);
    REQUIRE(dl::csv_number(text).has_value());
    CHECK(*dl::csv_number(text) == value);
  }
  for (std::string_view text : {"", "+", "-", "++2", "+-2", "-+2", "2+", "0x10", "nan", "inf",
                                "1e99", "1,5", "1 2", "two"}) {
    INFO(text);
    CHECK_FALSE(dl::csv_number(text).has_value());
  }
}

TEST_CASE("csv numbers: below float's range is float's nearest, above it is refused as such",
          "[csv][labels]") {
  // NumPy's float32 of each: zero below half the smallest subnormal, else the nearest.
  const std::vector<std::pair<std::string_view, float>> tiny{
      {"1e-46", 0.0f},   {"-1e-50", -0.0f},       {"2.5e-300", 0.0f},
      {"1e-400", 0.0f},  {"-0.0001e-999", -0.0f}, {"+3e-45", 2.802597e-45f},
      {"1e-40", 1e-40f}, {"1.0e-38", 1.0e-38f}};
  for (const auto& [text, value] : tiny) {
    INFO(text);
    REQUIRE(dl::csv_number(text).has_value());
    CHECK(*dl::csv_number(text) == value);
    CHECK(std::signbit(*dl::csv_number(text)) == std::signbit(value));
    CHECK_FALSE(dl::csv_number_too_large(text));
  }
  for (std::string_view text : {"3.5e38", "-3.5e38", "1e99", "1e999", "0.01e400", "+1e39"}) {
    INFO(text);
    CHECK_FALSE(dl::csv_number(text).has_value());
    CHECK(dl::csv_number_too_large(text));
  }
  for (std::string_view text : {"nan", "inf", "two", "1e", "3.4e38", "0"}) {
    INFO(text);
    CHECK_FALSE(dl::csv_number_too_large(text));
  }
}

TEST_CASE("csv labels: a class index is a finite non-negative whole number", "[csv][labels]") {
  CHECK(dl::label_as_index("3") == 3.0f);
  CHECK(dl::label_as_index("3.0") == 3.0f);
  CHECK(dl::label_as_index("0") == 0.0f);
  for (const char* text : {"-1", "2.5", "setosa", "", "3a", "nan", "inf", "1e99"})
    CHECK_FALSE(dl::label_as_index(text).has_value());
}

TEST_CASE("csv labels: numbers are indices, one text label makes every label a name",
          "[csv][labels]") {
  const std::vector<std::string_view> numbers{"2", "0", "1.0", "7"};
  CHECK(dl::csv_classes(numbers).names.empty());
  const std::vector<std::string_view> mixed{"1", "2", "other", "1", "10"};
  const dl::CsvClasses classes = dl::csv_classes(mixed);
  CHECK(classes.names == Names{"1", "10", "2", "other"});  // byte order, each once
  CHECK(classes.first_name == 2);
  const std::vector<std::string_view> text{"versicolor", "setosa", "Setosa", "setosa"};
  CHECK(dl::csv_classes(text).names == Names{"Setosa", "setosa", "versicolor"});
  const Names names{"Setosa", "setosa", "versicolor"};
  CHECK(dl::find_class(names, "setosa") == 1);
  CHECK(dl::find_class(names, "versicolor") == 2);
  CHECK_FALSE(dl::find_class(names, "SETOSA").has_value());
  CHECK_FALSE(dl::find_class(names, "rose").has_value());
}

TEST_CASE("csv labels: a message lists a few classes and counts the rest", "[csv][labels]") {
  CHECK(dl::quoted_class_list({"a", "b"}) == "'a', 'b'");
  Names many;
  for (int i = 0; i < 20; ++i) many.push_back("c" + std::to_string(i));
  const std::string list = dl::quoted_class_list(many);
  CHECK_THAT(list, Contains("'c0', 'c1'") && Contains("'c7', ... (20 classes)"));
  CHECK_THAT(list, !Contains("'c8'"));
}

TEST_CASE("csv labels: text labels become sorted class names and the labels their positions",
          "[csv][labels]") {
  dl::test::TempDir dir;
  const std::string train =
      write_text(dir, "train.csv",
                 "a,b,species\n1,2,virginica\n3,4,setosa\n5,6,\"versicolor\"\n"
                 "7,8, setosa \n");
  const dl::Dataset set = dl::read_csv(csv_request(train));
  CHECK(set.origin().class_names == Names{"setosa", "versicolor", "virginica"});
  CHECK(set.labels() == std::vector<std::int32_t>{2, 0, 1, 0});
  CHECK(set.features() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});

  const std::string test = write_text(dir, "test.csv", "a,b,species\n1,1,versicolor\n2,2,setosa\n");
  const dl::Dataset tested = read_with_training_classes(train, test);
  CHECK(tested.labels() == std::vector<std::int32_t>{1, 0});
  CHECK(tested.origin().class_names == set.origin().class_names);

  // Numbers mixed with text are names too: "1" is the class "1", not index 1.
  const std::string mixed = write_text(dir, "mixed.csv", "a,b,c\n1,2,1\n3,4,other\n5,6,0\n");
  const dl::Dataset read = dl::read_csv(csv_request(mixed));
  CHECK(read.origin().class_names == Names{"0", "1", "other"});
  CHECK(read.labels() == std::vector<std::int32_t>{1, 2, 0});
}

TEST_CASE("csv labels: names made by a few labels among indices are said in a note",
          "[csv][labels]") {
  dl::test::TempDir dir;
  // One stray 1.5 among indices 0, 1 and 2 makes every label a name: class "2" is then 3.
  const std::string stray =
      write_text(dir, "stray.csv", "a,b,c\n1,2,0\n3,4,2\n5,6,1.5\n7,8,1\n9,9,2\n");
  dl::CsvRequest ten = csv_request(stray);
  ten.num_classes = 10;
  const dl::Dataset set = dl::read_csv(ten);
  CHECK(set.origin().class_names == Names{"0", "1", "1.5", "2"});
  CHECK(set.labels() == std::vector<std::int32_t>{0, 3, 2, 1, 3});
  REQUIRE(set.origin().notes.size() == 1);
  CHECK_THAT(set.origin().notes[0],
             Contains("stray.csv: 4 of its 5 labels are class indices, but the label '1.5' on "
                      "line 4 is not a class index, so every label is read as a class name, the "
                      "classes in text order ('0', '1', '1.5', '2'); if the labels are class "
                      "indices, fix that row"));
  // Names mostly text get no note, nor do indices alone.
  const std::string names = write_text(dir, "names.csv", "a,b,c\n1,2,rose\n3,4,1\n5,6,tulip\n");
  CHECK(dl::read_csv(csv_request(names)).origin().notes.empty());
  const std::string indices = write_text(dir, "indices.csv", "a,b,c\n1,2,0\n3,4,1\n");
  CHECK(dl::read_csv(csv_request(indices)).origin().notes.empty());
}

TEST_CASE("csv labels: a quoted label's doubled quotes are one quote each", "[csv][labels]") {
  dl::test::TempDir dir;
  // RFC 4180: inside quotes, "" stands for one quote. The same class written with and without
  // quoting is one class; a quote that is the whole label survives too.
  const std::string train = write_text(dir, "train.csv",
                                       "a,b,c\n1,2,\"say \"\"hi\"\"\"\n"
                                       "5,6,\"\"\"\"\n7,8,\"plain\"\n9,10,plain\n");
  const dl::Dataset set = dl::read_csv(csv_request(train));
  CHECK(set.origin().class_names == Names{"\"", "plain", "say \"hi\""});
  CHECK(set.labels() == std::vector<std::int32_t>{2, 0, 1, 1});
  // A test file names the class in either spelling of the quotes.
  const std::string test =
      write_text(dir, "test.csv", "a,b,c\n1,1,\"say \"\"hi\"\"\"\n2,2,\"\"\"\"\n");
  CHECK(read_with_training_classes(train, test).labels() == std::vector<std::int32_t>{2, 0});
}

TEST_CASE("csv labels: a number label file reads as before", "[csv][labels]") {
  dl::test::TempDir dir;
  const std::string train = write_text(dir, "train.csv", "a,b,c\n1,2,2\n3,4,0.0\n");
  const dl::Dataset set = dl::read_csv(csv_request(train));
  CHECK(set.origin().class_names.empty());
  CHECK(set.labels() == std::vector<std::int32_t>{2, 0});
  const std::string big = write_text(dir, "big.csv", "a,b,c\n1,2,2\n3,4,12\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(big)),
                    Contains("big.csv: line 3: the label (field 3) is 12, not a class index from "
                             "0 to 2"));
  // A test file with a word where the training file has indices.
  const std::string test = write_text(dir, "test.csv", "a,b,c\n1,2,rose\n");
  CHECK_THROWS_WITH(read_with_training_classes(train, test),
                    Contains("test.csv: line 2: the label (field 3) is rose, not a class index"));
}

TEST_CASE("csv labels: a test label that is no training class is one line naming the classes",
          "[csv][labels]") {
  dl::test::TempDir dir;
  const std::string train =
      write_text(dir, "train.csv", "a,b,c\n1,2,setosa\n3,4,virginica\n5,6,versicolor\n");
  const std::string test =
      write_text(dir, "test.csv", "a,b,c\n1,2,setosa\n\n3,4,rose\n5,6,virginica\n");
  try {
    read_with_training_classes(train, test);
    FAIL("an unknown label was read");
  } catch (const dl::DataError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Contains("test.csv: line 4: the label (field 3) 'rose' is not one of the 3 "
                                 "classes of the training file ") &&
                            Contains("train.csv ('setosa', 'versicolor', 'virginica')") &&
                            Contains("onBadFile: skip"));
    CHECK(message.find('\n') == std::string::npos);
  }
  const dl::Dataset skipped = read_with_training_classes(train, test, dl::BadFileAction::kSkip);
  CHECK(skipped.labels() == std::vector<std::int32_t>{0, 2});
  REQUIRE(skipped.origin().skipped.size() == 1);
  CHECK_THAT(skipped.origin().skipped.front(), Contains("line 4: the label (field 3) 'rose'"));
}

TEST_CASE("csv labels: more names than numClasses, and labels that are no names", "[csv][labels]") {
  dl::test::TempDir dir;
  const std::string four = write_text(dir, "four.csv", "a,b,c\n1,2,3\n1,2,a\n1,2,b\n1,2,c\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(four)),
                    Contains("four.csv: the labels name 4 classes ('3', 'a', 'b', 'c'), more than "
                             "data.numClasses 3") &&
                        Contains("the label 'a' on line 3 is not a class index") &&
                        Contains("set data.numClasses: 4"));
  const std::string empty = write_text(dir, "empty.csv", "a,b,c\n1,2,x\n1,2,\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(empty)),
                    Contains("empty.csv: line 3: the label (field 3) is empty"));
  const std::string control = write_text(dir, "control.csv", "a,b,c\n1,2,x\n1,2,\"a\tb\"\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(control)),
                    Contains("control.csv: line 3: the label (field 3) 'a\\tb' is not UTF-8 text"));
}

TEST_CASE("csv labels: under onBadFile stop the rows before the first bad one decide",
          "[csv][labels]") {
  dl::test::TempDir dir;
  // Line 3 is bad; the text label after it neither decides nor hides that error.
  const std::string path = write_text(dir, "bad.csv", "a,b,c\n1,2,0\n1,x,1\n1,2,cat\n");
  CHECK_THROWS_WITH(dl::read_csv(csv_request(path)),
                    Contains("bad.csv: line 3: field 2 ('x') is not a finite number"));
  dl::CsvRequest skip = csv_request(path);
  skip.on_bad_row = dl::BadFileAction::kSkip;
  const dl::Dataset set = dl::read_csv(skip);
  CHECK(set.origin().class_names == Names{"0", "cat"});
  CHECK(set.labels() == std::vector<std::int32_t>{0, 1});
  CHECK(dl::read_csv_classes(skip) == set.origin().class_names);
}
