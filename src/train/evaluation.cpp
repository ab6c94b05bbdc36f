#include "train/evaluation.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/class_names.hpp"
#include "core/error.hpp"
#include "core/figure_text.hpp"
#include "io/json_writer.hpp"

namespace dl {
namespace {

constexpr int kDecimalBase = 10;

std::string plural_classes(std::size_t n) {
  return n == 1 ? "1 class" : fmt::format("{} classes", n);
}

int decimal_digits(std::int64_t value) {
  int digits = 1;
  for (; value >= kDecimalBase; value /= kDecimalBase) ++digits;
  return digits;
}

template <typename T>
std::string json_array(const std::vector<T>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

}  // namespace

Evaluation::Evaluation(int num_classes) : num_classes_(num_classes) {
  DL_CHECK(num_classes >= 1,
           fmt::format("an evaluation needs at least one class, got {}", num_classes));
  confusion_.assign(static_cast<std::size_t>(num_classes) * num_classes, 0);
}

void Evaluation::check_class(int c) const {
  DL_CHECK(c >= 0 && c < num_classes_, fmt::format("class {} is outside [0, {})", c, num_classes_));
}

void Evaluation::record(std::int32_t label, std::int32_t predicted, std::size_t sample) {
  if (label < 0 || label >= num_classes_) {
    throw DataError(fmt::format(
        "evaluation: label {} of sample {} in this batch is outside [0, {}); set data.numClasses "
        "to the number of classes in the dataset",
        label, sample, num_classes_));
  }
  DL_CHECK(predicted >= 0 && predicted < num_classes_,
           fmt::format("predicted class {} of sample {} is outside [0, {})", predicted, sample,
                       num_classes_));
  ++confusion_[static_cast<std::size_t>(label) * num_classes_ + predicted];
  ++count_;
}

void Evaluation::add(const std::int32_t* labels, const float* probabilities, std::size_t n) {
  if (n == 0) return;
  DL_CHECK(labels != nullptr && probabilities != nullptr, "null labels or probabilities");
  const std::size_t k = static_cast<std::size_t>(num_classes_);
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = probabilities + i * k;
    std::int32_t best = 0;
    float best_value = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < k; ++j) {
      // Strictly greater keeps the first maximum and never picks a NaN.
      if (row[j] > best_value) {
        best_value = row[j];
        best = static_cast<std::int32_t>(j);
      }
    }
    record(labels[i], best, i);
  }
}

void Evaluation::add_predictions(const std::int32_t* labels, const std::int32_t* predicted,
                                 std::size_t n) {
  if (n == 0) return;
  DL_CHECK(labels != nullptr && predicted != nullptr, "null labels or predictions");
  for (std::size_t i = 0; i < n; ++i) record(labels[i], predicted[i], i);
}

void Evaluation::merge(const Evaluation& other) {
  DL_CHECK(other.num_classes_ == num_classes_,
           fmt::format("cannot merge an evaluation of {} classes into one of {}",
                       other.num_classes_, num_classes_));
  for (std::size_t i = 0; i < confusion_.size(); ++i) confusion_[i] += other.confusion_[i];
  count_ += other.count_;
  if (class_names_.empty()) class_names_ = other.class_names_;
}

// "[0, 3, 7]", or with names "[0 'T-shirt', 3 'Dress']": the class list of the exclusion notes.
std::string Evaluation::class_list(const std::vector<int>& classes) const {
  std::vector<std::string> items;
  for (const int c : classes) items.push_back(class_text(c, class_names_));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

std::int64_t Evaluation::confusion(int actual, int predicted) const {
  check_class(actual);
  check_class(predicted);
  return confusion_[static_cast<std::size_t>(actual) * num_classes_ + predicted];
}

std::int64_t Evaluation::true_count(int c) const {
  check_class(c);
  std::int64_t sum = 0;
  for (int p = 0; p < num_classes_; ++p) sum += confusion(c, p);
  return sum;
}

std::int64_t Evaluation::predicted_count(int c) const {
  check_class(c);
  std::int64_t sum = 0;
  for (int a = 0; a < num_classes_; ++a) sum += confusion(a, c);
  return sum;
}

double Evaluation::accuracy() const {
  if (count_ == 0) return 0.0;
  std::int64_t correct = 0;
  for (int c = 0; c < num_classes_; ++c) correct += confusion(c, c);
  return static_cast<double>(correct) / static_cast<double>(count_);
}

double Evaluation::precision(int c) const {
  const std::int64_t predicted = predicted_count(c);
  return predicted == 0 ? 0.0 : static_cast<double>(confusion(c, c)) / predicted;
}

double Evaluation::recall(int c) const {
  const std::int64_t actual = true_count(c);
  return actual == 0 ? 0.0 : static_cast<double>(confusion(c, c)) / actual;
}

double Evaluation::f1(int c) const {
  const std::int64_t predicted = predicted_count(c);
  const std::int64_t actual = true_count(c);
  if (predicted == 0 || actual == 0) return 0.0;
  // 2PR/(P+R) written in counts: 2TP / (2TP + FP + FN), where FP + FN = predicted + actual - 2TP.
  const std::int64_t tp = confusion(c, c);
  return static_cast<double>(2 * tp) / static_cast<double>(predicted + actual);
}

std::vector<int> Evaluation::excluded_from_precision() const {
  std::vector<int> excluded;
  for (int c = 0; c < num_classes_; ++c)
    if (predicted_count(c) == 0) excluded.push_back(c);
  return excluded;
}

std::vector<int> Evaluation::excluded_from_recall() const {
  std::vector<int> excluded;
  for (int c = 0; c < num_classes_; ++c)
    if (true_count(c) == 0) excluded.push_back(c);
  return excluded;
}

std::vector<int> Evaluation::excluded_from_f1() const {
  std::vector<int> excluded;
  for (int c = 0; c < num_classes_; ++c)
    if (predicted_count(c) == 0 || true_count(c) == 0) excluded.push_back(c);
  return excluded;
}

double Evaluation::macro_average(double (Evaluation::*metric)(int) const,
                                 const std::vector<int>& excluded) const {
  double sum = 0.0;
  int included = 0;
  for (int c = 0; c < num_classes_; ++c) {
    if (std::find(excluded.begin(), excluded.end(), c) != excluded.end()) continue;
    sum += (this->*metric)(c);
    ++included;
  }
  return included == 0 ? 0.0 : sum / included;
}

double Evaluation::precision() const {
  return macro_average(&Evaluation::precision, excluded_from_precision());
}

double Evaluation::recall() const {
  return macro_average(&Evaluation::recall, excluded_from_recall());
}

double Evaluation::f1() const {
  return macro_average(&Evaluation::f1, excluded_from_f1());
}

std::string Evaluation::confusion_matrix_text() const {
  std::int64_t widest = num_classes_ - 1;  // the header's class indices
  for (std::int64_t value : confusion_) widest = std::max(widest, value);
  const int width = decimal_digits(widest) + 1;

  std::string text;
  for (int p = 0; p < num_classes_; ++p) text += fmt::format("{:>{}}", p, width);
  text += '\n';
  text += std::string(static_cast<std::size_t>(width) * num_classes_ + 1, '-');
  text += '\n';
  for (int a = 0; a < num_classes_; ++a) {
    for (int p = 0; p < num_classes_; ++p) text += fmt::format("{:>{}}", confusion(a, p), width);
    text += fmt::format(" | {}\n", class_text(a, class_names_));
  }
  text += "\nRow: actual class; column: predicted class; cell: number of examples\n";
  return text;
}

std::string Evaluation::stats() const {
  const std::vector<int> no_precision = excluded_from_precision();
  const std::vector<int> no_recall = excluded_from_recall();
  const std::vector<int> no_f1 = excluded_from_f1();
  auto excluded_note = [](const std::vector<int>& excluded) {
    return excluded.empty()
               ? std::string()
               : fmt::format("\t({} excluded from average)", plural_classes(excluded.size()));
  };

  std::string text = "========================Evaluation Metrics========================\n";
  text += fmt::format(" # of classes:    {}\n", num_classes_);
  text += fmt::format(" Accuracy:        {:.4f}\n", figure(accuracy()));
  text +=
      fmt::format(" Precision:       {:.4f}{}\n", figure(precision()), excluded_note(no_precision));
  text += fmt::format(" Recall:          {:.4f}{}\n", figure(recall()), excluded_note(no_recall));
  text += fmt::format(" F1 Score:        {:.4f}{}\n", figure(f1()), excluded_note(no_f1));
  text += fmt::format(
      "Precision, recall & F1: macro-averaged (unweighted mean over the {} classes, less those "
      "excluded)\n",
      num_classes_);
  text += fmt::format(" Examples:        {}\n", count_);

  if (!no_precision.empty()) {
    text += fmt::format("\nNote: {} never predicted, excluded from average precision: {}\n",
                        plural_classes(no_precision.size()), class_list(no_precision));
  }
  if (!no_recall.empty()) {
    text += fmt::format("\nNote: {} absent from the labels, excluded from average recall: {}\n",
                        plural_classes(no_recall.size()), class_list(no_recall));
  }
  if (!no_f1.empty()) {
    text += fmt::format("\nNote: {} excluded from average F1 (either of the above): {}\n",
                        plural_classes(no_f1.size()), class_list(no_f1));
  }

  text += "\n=========================Confusion Matrix=========================\n";
  if (num_classes_ <= kMaxClassesInPrintedMatrix) {
    text += confusion_matrix_text();
  } else {
    text += fmt::format(
        "Not printed for {} classes (more than {}); see confusion in the evaluation JSON\n",
        num_classes_, kMaxClassesInPrintedMatrix);
  }
  text += "==================================================================\n";
  return text;
}

std::string Evaluation::to_json() const {
  std::vector<double> precisions, recalls, f1s;
  std::vector<std::int64_t> true_counts, predicted_counts;
  std::vector<std::string> rows;
  for (int c = 0; c < num_classes_; ++c) {
    precisions.push_back(precision(c));
    recalls.push_back(recall(c));
    f1s.push_back(f1(c));
    true_counts.push_back(true_count(c));
    predicted_counts.push_back(predicted_count(c));
    const auto row_begin = confusion_.begin() + static_cast<std::ptrdiff_t>(c) * num_classes_;
    rows.push_back(json_array(std::vector<std::int64_t>(row_begin, row_begin + num_classes_)));
  }
  // Every metric is a finite ratio of counts (0 where undefined), so plain numbers are valid JSON.
  return fmt::format(
      "{{\"num_classes\": {}, \"count\": {}, \"accuracy\": {}, \"precision\": {}, \"recall\": {}, "
      "\"f1\": {}, \"excluded_from_precision\": {}, \"excluded_from_recall\": {}, "
      "\"excluded_from_f1\": {}, \"precision_per_class\": {}, \"recall_per_class\": {}, "
      "\"f1_per_class\": {}, \"true_count_per_class\": {}, \"predicted_count_per_class\": {}, "
      "\"confusion\": [{}]{}}}",
      num_classes_, count_, accuracy(), precision(), recall(), f1(),
      json_array(excluded_from_precision()), json_array(excluded_from_recall()),
      json_array(excluded_from_f1()), json_array(precisions), json_array(recalls), json_array(f1s),
      json_array(true_counts), json_array(predicted_counts), fmt::join(rows, ", "),
      class_names_.empty() ? std::string() : named_json());
}

// The keys a named evaluation adds after the numeric ones, which stay as they are for readers
// that know classes by index: class_names (by label) and per_class, each class's figures under
// its name (null past the last name). Names go through the JSON writer, which escapes them.
std::string Evaluation::named_json() const {
  std::vector<std::string> entries;
  for (int c = 0; c < num_classes_; ++c) {
    const std::string* name = class_name(class_names_, c);
    entries.push_back(fmt::format(
        "{{\"class\": {}, \"name\": {}, \"precision\": {}, \"recall\": {}, \"f1\": {}, "
        "\"true_count\": {}, \"predicted_count\": {}}}",
        c, name == nullptr ? "null" : json_line(Json(*name)), precision(c), recall(c), f1(c),
        true_count(c), predicted_count(c)));
  }
  std::vector<std::string> names;
  for (const std::string& name : class_names_) names.push_back(json_line(Json(name)));
  return fmt::format(", \"class_names\": [{}], \"per_class\": [{}]", fmt::join(names, ", "),
                     fmt::join(entries, ", "));
}

}  // namespace dl
