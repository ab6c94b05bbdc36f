#pragma once

#include <string>

// One spelling for an evaluated set's metrics in every output a run writes: metrics.jsonl's
// keys, the console's epoch line, TensorBoard's tags and the report (which reads metrics.jsonl
// back). Keras's names: `val_accuracy` for the validation set, `test_accuracy` for the test set.

namespace dl {

inline const std::string kValidationMetricPrefix = "val_";
inline const std::string kTestMetricPrefix = "test_";

}  // namespace dl
