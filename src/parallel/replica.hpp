// One worker's replica: its backend, model, optimizer and loss scaler for the whole run, the
// buffers that keep its round losses in backend memory between sync points, and (resident data
// path) its copy of the training set. The phases of a training step that do not depend on the
// step strategy are its member functions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"
#include "core/error.hpp"
#include "nn/model.hpp"
#include "optim/loss_scaler.hpp"
#include "optim/optimizer.hpp"
#include "parallel/batch_source.hpp"
#include "parallel/step_recorder.hpp"

namespace dl {

struct Replica {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LossScaler> scaler;
  FloatBuffer round_losses;         // the summed loss of each round since the last sync point
  FloatBuffer round_correct;        // the correct predictions of each of those rounds
  FloatBuffer loss_probe;           // synchronous overflow: the workers' losses, summed
  FloatBuffer step_results;         // the last step's summed loss and correct predictions
  std::unique_ptr<StepRecorder> recorder;  // records and replays the step's fixed-shape part
  std::vector<float> host_losses;   // round_losses read back at a sync point
  std::vector<float> host_correct;  // round_correct read back at a sync point
  std::unique_ptr<ResidentTrainingSet> resident;  // resident data path only

  std::size_t parameter_count() const { return model->parameter_count(); }

  // Forward and backward of the batch of `samples` in the model's input (samples > 0): the
  // gradient of the summed loss divided by `divisor` (times the loss scale) is left in
  // model->gradients(), the summed loss in `loss` and the correct predictions in `correct`.
  void compute_gradient(int samples, double divisor, const StepContext& ctx, float* loss,
                        float* correct);
  // An accepted step: the gradients, unscaled, go to the updater.
  void apply_step(std::int64_t iteration, double lr_multiplier);
  // A step skipped for overflow shrinks the loss scale; throws DivergenceError (naming the epoch
  // and iteration) when it can shrink no further.
  void on_overflow(int epoch, std::int64_t iteration);
  // The value of one float of backend memory (waits for the backend).
  float read(const float* device_value);
};

// "epoch E, iteration I: the WHAT is not finite (NaN or Inf); ..." with the fixes, for the step
// `iteration` (0-based: I is iteration + 1, as scores.csv counts).
DivergenceError non_finite_error(int epoch, std::int64_t iteration, const char* what);

}  // namespace dl
