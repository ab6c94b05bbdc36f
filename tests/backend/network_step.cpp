#include "backend/network_step.hpp"

#include <cstdint>

#include "core/random.hpp"
#include "nn/model.hpp"

namespace dl::testing {

NetworkStep take_network_step(const Config& config, Backend& backend, int batch) {
  Model model(config, backend, batch);
  model.initialize(config.seed);
  RandomStream rng(77, 0);
  std::vector<float> images(batch * model.input_size());
  for (float& v : images) v = rng.uniform();
  std::vector<std::int32_t> labels;
  for (int i = 0; i < batch; ++i) labels.push_back(i % model.num_classes());
  backend.upload(model.input(), images.data(), images.size() * sizeof(float));
  backend.upload(model.labels(), labels.data(), labels.size() * sizeof(std::int32_t));
  StepContext ctx;
  ctx.training = true;
  ctx.seed = 1;
  ctx.iteration = 3;
  model.forward(batch, ctx);
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
