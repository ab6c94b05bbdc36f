// Classification metrics over a test set, in the manner of DL4J's Evaluation: a confusion matrix
// accumulated batch by batch (and mergeable across workers), from which accuracy, per-class and
// macro-averaged precision, recall and F1 are derived, printed (stats) and written (to_json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dl {

class Evaluation {
 public:
  explicit Evaluation(int num_classes);

  // probabilities: n x k row-major (the output layer's activations). The predicted class is the
  // argmax, the first maximum on ties; NaN entries never win (a row of NaN predicts class 0).
  // Labels outside [0, k) throw DataError: they mean the dataset and data.numClasses disagree.
  void add(const std::int32_t* labels, const float* probabilities, std::size_t n);
  void add_predictions(const std::int32_t* labels, const std::int32_t* predicted, std::size_t n);
  // Adds another evaluation's counts (e.g. one per worker); both must have the same classes.
  void merge(const Evaluation& other);

  int num_classes() const { return num_classes_; }
  // The data's class names by label (core/class_names.hpp), when it has them: stats() and
  // to_json() then name the classes. May be fewer than num_classes() (a wider output layer).
  void set_class_names(std::vector<std::string> names) { class_names_ = std::move(names); }
  const std::vector<std::string>& class_names() const { return class_names_; }
  std::int64_t count() const { return count_; }
  double accuracy() const;  // 0 when nothing was added

  // Per class. An undefined ratio (0/0: class never predicted for precision, never present in
  // the labels for recall) is reported as 0, as DL4J does. f1(c) is 0 when either is undefined.
  double precision(int c) const;
  double recall(int c) const;
  double f1(int c) const;

  // Macro averages: the unweighted mean over the classes for which the metric is defined, for
  // any number of classes (also 2; DL4J switches to "class 1 only" there). Excluded:
  //   precision: classes never predicted (true positives + false positives = 0);
  //   recall:    classes absent from the labels (true positives + false negatives = 0);
  //   f1:        classes excluded from either of the two.
  // The excluded_* lists name them; stats() prints how many and which. 0 when every class is
  // excluded (nothing added).
  double precision() const;
  double recall() const;
  double f1() const;
  std::vector<int> excluded_from_precision() const;
  std::vector<int> excluded_from_recall() const;
  std::vector<int> excluded_from_f1() const;

  std::int64_t confusion(int actual, int predicted) const;
  std::int64_t true_count(int c) const;       // examples whose label is c (row sum)
  std::int64_t predicted_count(int c) const;  // examples predicted as c (column sum)

  // A report laid out like DL4J's Evaluation.stats(): the metrics with 4 decimals, notes on the
  // classes excluded from the macro averages, then the confusion matrix (rows actual, columns
  // predicted) when there are at most kMaxClassesInPrintedMatrix classes.
  std::string stats() const;
  // One JSON object: num_classes, count, accuracy, precision, recall, f1 (macro), the excluded
  // classes, per-class arrays (precision_per_class, recall_per_class, f1_per_class,
  // true_count_per_class, predicted_count_per_class) and confusion (rows actual); with class
  // names also class_names and per_class, one object per class with its name and figures.
  std::string to_json() const;

  // Beyond this many classes the printed matrix would be too wide to read (DL4J's limit too).
  static constexpr int kMaxClassesInPrintedMatrix = 20;

 private:
  void check_class(int c) const;
  void record(std::int32_t label, std::int32_t predicted, std::size_t sample);
  double macro_average(double (Evaluation::*metric)(int) const,
                       const std::vector<int>& excluded) const;
  std::string confusion_matrix_text() const;
  std::string class_list(const std::vector<int>& classes) const;
  std::string named_json() const;

  int num_classes_;
  std::int64_t count_ = 0;
  std::vector<std::int64_t> confusion_;  // num_classes_ x num_classes_, [actual][predicted]
  std::vector<std::string> class_names_;
};

}  // namespace dl
