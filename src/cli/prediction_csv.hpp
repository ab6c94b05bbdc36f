// The CSV of predictions that `predict` and `eval --predictions` write (docs/OUTPUTS.md): one
// row per sample, "index", the sample's source where the input names it ("file", "line": predict),
// its label (eval), "predicted", "predicted_class" for a model trained on named classes (an image
// folder, a CSV file's text labels), then the class probabilities "p0,...". One writer, so that
// the two commands name and write the same columns the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dl {

class PredictionCsv {
 public:
  // `names`: the model's class names by label (empty: numbers), kept by reference;
  // `source_column`: the sources' column (empty: none); `labelled`: a label column.
  PredictionCsv(int classes, const std::vector<std::string>& names, std::string source_column,
                bool labelled);

  // Adds sample `index`'s row from its `outputs` (one probability per class); `source` and
  // `label` are written where the columns are. Returns the predicted class.
  int add(std::int64_t index, std::string_view source, std::int32_t label, const float* outputs);

  const std::string& text() const { return text_; }

 private:
  int classes_;
  const std::vector<std::string>& names_;
  bool sourced_;
  bool labelled_;
  std::string text_;
};

}  // namespace dl
