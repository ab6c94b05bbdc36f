#include "train/evaluation.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <catch2/catch.hpp>

#include "core/error.hpp"

namespace {

// 3 classes, 10 samples. Confusion (rows actual, columns predicted):
//          p0 p1 p2 | true count
//   a0:     3  1  1 | 5
//   a1:     1  2  0 | 3
//   a2:     0  1  1 | 2
//   predicted count: 4, 4, 2
// accuracy  = (3 + 2 + 1) / 10 = 0.6
// precision = TP / predicted: c0 3/4 = 0.75, c1 2/4 = 0.5, c2 1/2 = 0.5; macro 1.75/3 = 0.583333
// recall    = TP / true:      c0 3/5 = 0.6, c1 2/3 = 0.666667, c2 1/2 = 0.5;
//             macro (0.6 + 0.666667 + 0.5)/3 = 0.588889
// f1        = 2TP / (predicted + true): c0 6/9 = 0.666667, c1 4/7 = 0.571429, c2 2/4 = 0.5;
//             macro (0.666667 + 0.571429 + 0.5)/3 = 0.579365
const std::vector<std::int32_t> kLabels = {0, 0, 0, 0, 0, 1, 1, 1, 2, 2};
const std::vector<std::int32_t> kPredicted = {0, 0, 0, 1, 2, 1, 1, 0, 2, 1};
constexpr int kClasses = 3;
constexpr std::size_t kHeaderWidth = 66;  // "====...Evaluation Metrics====..."

dl::Evaluation three_class_evaluation() {
  dl::Evaluation eval(kClasses);
  eval.add_predictions(kLabels.data(), kPredicted.data(), kLabels.size());
  return eval;
}

// 4 classes, 6 samples, where class 2 is never predicted and class 3 never occurs:
//          p0 p1 p2 p3 | true
//   a0:     1  0  0  1 | 2
//   a1:     0  2  0  0 | 2
//   a2:     1  1  0  0 | 2
//   a3:     0  0  0  0 | 0
//   pred:   2  3  0  1
// precision: c0 1/2, c1 2/3, c2 undefined (excluded), c3 0/1 = 0 -> macro (0.5+0.666667+0)/3
// recall:    c0 1/2, c1 2/2, c2 0/2 = 0, c3 undefined (excluded) -> macro (0.5+1+0)/3 = 0.5
// f1:        c0 2/4 = 0.5, c1 4/5 = 0.8, c2 and c3 excluded -> macro (0.5+0.8)/2 = 0.65
dl::Evaluation evaluation_with_excluded_classes() {
  const std::vector<std::int32_t> labels = {0, 0, 1, 1, 2, 2};
  const std::vector<std::int32_t> predicted = {0, 3, 1, 1, 0, 1};
  dl::Evaluation eval(4);
  eval.add_predictions(labels.data(), predicted.data(), labels.size());
  return eval;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("Evaluation: per-class and macro metrics of a hand-computed 3-class matrix") {
  const dl::Evaluation eval = three_class_evaluation();
  CHECK(eval.count() == 10);
  CHECK(eval.confusion(0, 0) == 3);
  CHECK(eval.confusion(0, 1) == 1);
  CHECK(eval.confusion(0, 2) == 1);
  CHECK(eval.confusion(1, 0) == 1);
  CHECK(eval.confusion(1, 2) == 0);
  CHECK(eval.confusion(2, 1) == 1);
  CHECK(eval.accuracy() == Approx(0.6));

  CHECK(eval.precision(0) == Approx(0.75));
  CHECK(eval.precision(1) == Approx(0.5));
  CHECK(eval.precision(2) == Approx(0.5));
  CHECK(eval.recall(0) == Approx(0.6));
  CHECK(eval.recall(1) == Approx(2.0 / 3.0));
  CHECK(eval.recall(2) == Approx(0.5));
  CHECK(eval.f1(0) == Approx(2.0 / 3.0));
  CHECK(eval.f1(1) == Approx(4.0 / 7.0));
  CHECK(eval.f1(2) == Approx(0.5));

  CHECK(eval.precision() == Approx(1.75 / 3.0));
  CHECK(eval.recall() == Approx((0.6 + 2.0 / 3.0 + 0.5) / 3.0));
  CHECK(eval.f1() == Approx((2.0 / 3.0 + 4.0 / 7.0 + 0.5) / 3.0));
  CHECK(eval.excluded_from_precision().empty());
  CHECK(eval.excluded_from_recall().empty());
  CHECK(eval.excluded_from_f1().empty());
}

TEST_CASE("Evaluation: classes without predictions or without examples leave the macro average") {
  const dl::Evaluation eval = evaluation_with_excluded_classes();
  CHECK(eval.excluded_from_precision() == std::vector<int>{2});
  CHECK(eval.excluded_from_recall() == std::vector<int>{3});
  CHECK(eval.excluded_from_f1() == std::vector<int>{2, 3});

  CHECK(eval.precision(2) == 0.0);  // 0/0 reported as 0, but not averaged
  CHECK(eval.precision(3) == 0.0);  // 0/1: a real zero, averaged
  CHECK(eval.recall(3) == 0.0);
  CHECK(eval.f1(2) == 0.0);

  CHECK(eval.precision() == Approx((0.5 + 2.0 / 3.0 + 0.0) / 3.0));
  CHECK(eval.recall() == Approx(0.5));
  CHECK(eval.f1() == Approx(0.65));
  CHECK(eval.accuracy() == Approx(3.0 / 6.0));
}

TEST_CASE("Evaluation: argmax picks the first maximum and ignores NaN") {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  // Rows: tie 0/1 -> 0; tie 1/2 -> 1; NaN first -> 2 (largest real); all NaN -> 0.
  const std::vector<float> probabilities = {0.4f, 0.4f,  0.2f,   //
                                            0.1f, 0.45f, 0.45f,  //
                                            kNaN, 0.3f,  0.7f,   //
                                            kNaN, kNaN,  kNaN};
  const std::vector<std::int32_t> labels = {0, 2, 2, 1};
  dl::Evaluation eval(kClasses);
  eval.add(labels.data(), probabilities.data(), labels.size());
  CHECK(eval.confusion(0, 0) == 1);
  CHECK(eval.confusion(2, 1) == 1);
  CHECK(eval.confusion(2, 2) == 1);
  CHECK(eval.confusion(1, 0) == 1);
  CHECK(eval.count() == 4);
}

TEST_CASE("Evaluation: merging parts equals adding everything at once") {
  const dl::Evaluation whole = three_class_evaluation();
  constexpr std::size_t kSplit = 4;
  dl::Evaluation first(kClasses);
  dl::Evaluation second(kClasses);
  first.add_predictions(kLabels.data(), kPredicted.data(), kSplit);
  second.add_predictions(kLabels.data() + kSplit, kPredicted.data() + kSplit,
                         kLabels.size() - kSplit);
  first.merge(second);
  CHECK(first.count() == whole.count());
  for (int a = 0; a < kClasses; ++a)
    for (int p = 0; p < kClasses; ++p) CHECK(first.confusion(a, p) == whole.confusion(a, p));
  CHECK(first.f1() == whole.f1());

  dl::Evaluation other_classes(kClasses + 1);
  CHECK_THROWS_AS(first.merge(other_classes), dl::InternalError);
}

TEST_CASE("Evaluation: a label outside the classes is a data error") {
  dl::Evaluation eval(kClasses);
  const std::int32_t labels[] = {0, 3};
  const std::int32_t predicted[] = {0, 0};
  CHECK_THROWS_AS(eval.add_predictions(labels, predicted, 2), dl::DataError);
  const std::int32_t negative[] = {-1};
  CHECK_THROWS_AS(eval.add_predictions(negative, predicted, 1), dl::DataError);
}

TEST_CASE("Evaluation: nothing added gives zeros, not NaN") {
  const dl::Evaluation eval(kClasses);
  CHECK(eval.count() == 0);
  CHECK(eval.accuracy() == 0.0);
  CHECK(eval.precision() == 0.0);
  CHECK(eval.recall() == 0.0);
  CHECK(eval.f1() == 0.0);
}

TEST_CASE("Evaluation: stats() prints the metrics with 4 decimals and the confusion rows") {
  const std::string stats = three_class_evaluation().stats();
  CHECK(contains(stats, "========================Evaluation Metrics========================"));
  CHECK(contains(stats, " # of classes:    3\n"));
  CHECK(contains(stats, " Accuracy:        0.6000\n"));
  CHECK(contains(stats, " Precision:       0.5833\n"));
  CHECK(contains(stats, " Recall:          0.5889\n"));
  CHECK(contains(stats, " F1 Score:        0.5794\n"));
  CHECK(contains(stats, "=========================Confusion Matrix========================="));
  // Columns are 2 wide: one digit plus a space.
  CHECK(contains(stats, " 0 1 2\n-------\n"));
  CHECK(contains(stats, " 3 1 1 | 0\n"));
  CHECK(contains(stats, " 1 2 0 | 1\n"));
  CHECK(contains(stats, " 0 1 1 | 2\n"));
  // The closing rule is as wide as the header rule.
  const std::string closing = std::string(kHeaderWidth, '=') + "\n";
  REQUIRE(stats.size() > closing.size());
  CHECK(stats.compare(stats.size() - closing.size(), closing.size(), closing) == 0);
  CHECK_FALSE(contains(stats, "excluded from average"));
}

TEST_CASE("Evaluation: stats() names the classes excluded from each average") {
  const std::string stats = evaluation_with_excluded_classes().stats();
  CHECK(contains(stats, " Precision:       0.3889\t(1 class excluded from average)\n"));
  CHECK(contains(stats, " Recall:          0.5000\t(1 class excluded from average)\n"));
  CHECK(contains(stats, " F1 Score:        0.6500\t(2 classes excluded from average)\n"));
  CHECK(contains(stats, "excluded from average precision: [2]"));
  CHECK(contains(stats, "excluded from average recall: [3]"));
  CHECK(contains(stats, "excluded from average F1 (either of the above): [2, 3]"));
}

TEST_CASE("Evaluation: many classes skip the printed matrix but keep the metrics") {
  constexpr int kManyClasses = dl::Evaluation::kMaxClassesInPrintedMatrix + 1;
  dl::Evaluation eval(kManyClasses);
  const std::int32_t label = kManyClasses - 1;
  eval.add_predictions(&label, &label, 1);
  const std::string stats = eval.stats();
  CHECK(contains(stats, " Accuracy:        1.0000\n"));
  CHECK(contains(stats, "Not printed for 21 classes"));
  CHECK_FALSE(contains(stats, "| 20\n"));
}

TEST_CASE("Evaluation: to_json is valid JSON with the metrics and the matrix") {
  const dl::Evaluation eval = three_class_evaluation();
  const std::string json = eval.to_json();
  for (const char* key :
       {"\"accuracy\"", "\"precision\"", "\"recall\"", "\"f1\"", "\"precision_per_class\"",
        "\"recall_per_class\"", "\"f1_per_class\"", "\"confusion\"", "\"excluded_from_f1\""})
    CHECK(contains(json, key));

  // YAML is a superset of JSON: a successful YAML parse of a flow mapping checks the syntax.
  const YAML::Node root = YAML::Load(json);
  REQUIRE(root.IsMap());
  CHECK(root["num_classes"].as<int>() == kClasses);
  CHECK(root["count"].as<int>() == 10);
  CHECK(root["accuracy"].as<double>() == Approx(0.6));
  CHECK(root["f1"].as<double>() == Approx(eval.f1()));
  REQUIRE(root["recall_per_class"].size() == kClasses);
  CHECK(root["recall_per_class"][1].as<double>() == Approx(2.0 / 3.0));
  REQUIRE(root["confusion"].size() == kClasses);
  CHECK(root["confusion"][0][2].as<int>() == 1);
  CHECK(root["confusion"][1][0].as<int>() == 1);
  CHECK(root["confusion"][2][2].as<int>() == 1);
  CHECK(root["predicted_count_per_class"][1].as<int>() == 4);
}

TEST_CASE("Evaluation: with class names, stats() and to_json() name the classes") {
  dl::Evaluation eval = evaluation_with_excluded_classes();
  const std::string plain_json = eval.to_json();
  CHECK_FALSE(contains(plain_json, "class_names"));
  CHECK_FALSE(contains(plain_json, "\"per_class\""));
  // Three names for four output units: class 3 has none.
  eval.set_class_names({"ankle boot", "say \"hi\"", "T-shirt"});
  const std::string stats = eval.stats();
  CHECK(contains(stats, "excluded from average precision: [2 'T-shirt']"));
  CHECK(contains(stats, "excluded from average recall: [3]"));
  CHECK(contains(stats, "excluded from average F1 (either of the above): [2 'T-shirt', 3]"));
  CHECK(contains(stats, " | 0 'ankle boot'\n"));
  CHECK(contains(stats, " | 3\n"));

  const std::string json = eval.to_json();
  // The numeric keys come first, as they were.
  CHECK(json.substr(0, json.find(", \"class_names\"")) + "}" == plain_json);
  const YAML::Node root = YAML::Load(json);
  REQUIRE(root["class_names"].size() == 3);
  CHECK(root["class_names"][1].as<std::string>() == "say \"hi\"");
  REQUIRE(root["per_class"].size() == 4);
  CHECK(root["per_class"][0]["name"].as<std::string>() == "ankle boot");
  CHECK(root["per_class"][1]["class"].as<int>() == 1);
  CHECK(root["per_class"][1]["recall"].as<double>() == Approx(1.0));
  CHECK(root["per_class"][1]["predicted_count"].as<int>() == 3);
  CHECK(root["per_class"][3]["name"].IsNull());
}
