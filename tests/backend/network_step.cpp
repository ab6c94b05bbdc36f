#include "backend/network_step.hpp"

#include <cstdint>

#include "fixed_batch.hpp"
#include "nn/model.hpp"

namespace dl::testing {

NetworkStep take_network_step(const Config& config, Backend& backend, int batch) {
  Model model(config, backend, batch);
  model.initialize(config.seed);
  const FixedBatch b = fixed_batch(model, batch);
  backend.upload(model.input(), b.images.data(), b.images.size() * sizeof(float));
  backend.upload(model.labels(), b.labels.data(), b.labels.size() * sizeof(std::int32_t));
  model.forward(batch, fixed_training_step());
  model.compute_loss(batch);
  model.backward(batch, 1.0f);
  NetworkStep s;
  backend.download(&s.loss, model.loss_sum(), sizeof(float));
  s.output.resize(static_cast<std::size_t>(batch) * model.num_classes());
  backend.download(s.output.data(), model.output(), s.output.size() * sizeof(float));
  s.gradients.resize(model.parameter_count());
  backend.download(s.gradients.data(), model.gradients(), s.gradients.size() * sizeof(float));
  return s;
}

}  // namespace dl::testing
