// Evaluation of a model on a whole data set, in order, in inference mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "data/dataset.hpp"
#include "nn/model.hpp"
#include "train/evaluation.hpp"

namespace dl {

struct EvaluationResult {
  Evaluation evaluation;
  double mean_loss = 0.0;  // the output layer's loss averaged over the examples (no L2 term)
  explicit EvaluationResult(int classes) : evaluation(classes) {}
};

// The evaluation names the classes when `data` does (its origin's class names).
EvaluationResult evaluate(Model& model, const Dataset& data);

// Called once per batch after its forward pass: the batch's first sample index, its size n, and
// on the host its labels [n] and the output layer's activations [n x classes]. The model's labels
// are uploaded too, so the callback may ask it for the loss.
using BatchOutputs = std::function<void(std::int64_t first, std::size_t n,
                                        const std::int32_t* labels, const float* outputs)>;

// Runs the model in inference mode over `data`, in order, in batches of model.max_batch().
void run_inference(Model& model, const Dataset& data, const BatchOutputs& on_batch);

}  // namespace dl
