// The fixed batch and training step that the tests taking one step of a whole network share: the
// finite-difference fixture (tests/nn/whole_model_gradient.hpp) and the step compared between
// backends and thread counts (tests/backend/network_step.cpp). Pixels uniform in [0, 1) from one
// fixed stream, labels cycling through the classes, and a training step whose dropout masks are
// the same every time it is taken.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.hpp"
#include "nn/model.hpp"

namespace dl::testing {

struct FixedBatch {
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};

inline FixedBatch fixed_batch(const Model& model, int batch) {
  constexpr std::uint64_t kPixelsSeed = 77;
  FixedBatch b;
  RandomStream rng(kPixelsSeed, 0);
  b.images.resize(static_cast<std::size_t>(batch) * model.input_size());
  for (float& v : b.images) v = rng.uniform();
  for (int i = 0; i < batch; ++i) b.labels.push_back(i % model.num_classes());
  return b;
}

// Training mode at a fixed step: seed 1, iteration 3.
inline StepContext fixed_training_step() {
  StepContext ctx;
  ctx.training = true;
  ctx.seed = 1;
  ctx.iteration = 3;
  return ctx;
}

}  // namespace dl::testing
