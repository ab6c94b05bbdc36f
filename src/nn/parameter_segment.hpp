// The layout of the flat parameter buffer (ARCHITECTURE.md invariant 1): each layer declares the
// runs of its slice, the model concatenates them, and the optimizer reads them to regularize,
// normalize and skip each run as its kind asks. Declared here, with the layers that make it, so
// that the layers need nothing of src/optim/.
#pragma once

#include <cstddef>

namespace dl {

// A run of the flat buffer that belongs to one parameter tensor.
struct ParameterSegment {
  std::size_t offset = 0, count = 0;
  // A bias, or batch normalization's scale or shift: regularized with l2Bias instead of l2, and
  // decayed by AdamW only with updater.weightDecayBias
  bool bias_like = false;
  bool trainable = true;  // false: batch-norm running statistics (never updated, never regularized)
  int layer = 0;          // the layer it belongs to (per-layer gradient normalization)
};

}  // namespace dl
