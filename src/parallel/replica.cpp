#include "parallel/replica.hpp"

#include <fmt/format.h>

#include "core/epoch_number.hpp"
#include "core/error.hpp"

namespace dl {

void Replica::compute_gradient(int samples, double divisor, const StepContext& ctx, float* loss,
                               float* correct) {
  const float mean_scale = static_cast<float>(1.0 / divisor);
  const float grad_scale =
      scaler->enabled() ? mean_scale * static_cast<float>(scaler->scale()) : mean_scale;
  // The part a recording may replay writes only to fixed places (the model's buffers,
  // step_results); the round's slots for the loss and the count are filled after it.
  float* step_loss = step_results.data();
  float* step_correct = step_results.data() + 1;
  recorder->run(recorded_step_key(samples, grad_scale), [&] {
    model->forward(samples, ctx);
    backend->count_correct(samples, model->num_classes(), model->output(), model->labels(),
                           step_correct);
    model->backward(samples, grad_scale);
    backend->copy(step_loss, model->loss_sum(), sizeof(float));
  });
  backend->copy(loss, step_loss, sizeof(float));
  backend->copy(correct, step_correct, sizeof(float));
}

void Replica::apply_step(std::int64_t iteration, double lr_multiplier) {
  const std::size_t n = parameter_count();
  if (scaler->enabled()) backend->scale(n, scaler->inverse_scale(), model->gradients());
  optimizer->step(model->parameters(), model->gradients(), iteration, lr_multiplier);
  if (scaler->dynamic()) scaler->on_good_step();
  scaler->on_applied_step();
}

void Replica::on_overflow(int epoch, std::int64_t iteration) {
  try {
    scaler->on_overflow();
  } catch (const DivergenceError& e) {
    throw DivergenceError(
        fmt::format("epoch {}, iteration {}: {}", epoch_number(epoch), iteration + 1, e.what()));
  }
}

float Replica::read(const float* device_value) {
  float value = 0.0f;
  backend->download(&value, device_value, sizeof(float));
  return value;
}

DivergenceError non_finite_error(int epoch, std::int64_t iteration, const char* what) {
  // Counted from 1 as scores.csv and the console count iterations (the step is 0-based).
  return DivergenceError(
      fmt::format("epoch {}, iteration {}: the {} is not finite (NaN or Inf); lower "
                  "updater.learningRate, or set onNonFiniteLoss: skip to drop such batches",
                  epoch_number(epoch), iteration + 1, what));
}

}  // namespace dl
