// The whole-model finite-difference check shared by the chain and graph tests: the summed loss of
// a small batch, perturbed one parameter at a time, against the backward pass's gradients.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/random.hpp"
#include "nn/model.hpp"

namespace dl::testing {

constexpr int kBatch = 3;

struct Fixture {
  dl::Config config;
  dl::CpuBackend backend;
  dl::Model model;
  std::vector<float> images;
  std::vector<std::int32_t> labels;

  explicit Fixture(const char* yaml)
      : config(dl::load_config_string(yaml, "test.yaml")), model(config, backend, kBatch) {
    model.initialize(config.seed);
    dl::RandomStream rng(77, 0);
    images.resize(kBatch * model.input_size());
    for (float& v : images) v = rng.uniform();
    for (int i = 0; i < kBatch; ++i) labels.push_back(i % model.num_classes());
    backend.upload(model.labels(), labels.data(), labels.size() * sizeof(std::int32_t));
  }

  // The summed loss at the current parameters, in training mode at a fixed step (so dropout draws
  // the same mask every time).
  double loss() {
    backend.upload(model.input(), images.data(), images.size() * sizeof(float));
    dl::StepContext ctx;
    ctx.training = true;
    ctx.seed = 1;
    ctx.iteration = 3;
    model.forward(kBatch, ctx);
    model.compute_loss(kBatch);
    return *model.loss_sum();
  }
};

inline void check_whole_model_gradient(const char* yaml) {
  Fixture f(yaml);
  const std::size_t n = f.model.parameter_count();
  f.loss();
  f.model.backward(kBatch, 1.0f);
  const std::vector<float> analytic(f.model.gradients(), f.model.gradients() + n);
  float* params = f.model.parameters();
  // Small enough that no perturbation moves a max-pooling winner, large enough for float noise.
  const double step = 1e-3;
  int checked = 0;
  for (const dl::ParameterSegment& s : f.model.segments()) {
    if (!s.trainable) continue;
    for (std::size_t i = s.offset; i < s.offset + s.count; ++i) {
      const float saved = params[i];
      params[i] = static_cast<float>(saved + step);
      const double plus = f.loss();
      params[i] = static_cast<float>(saved - step);
      const double minus = f.loss();
      params[i] = saved;
      const double numeric = (plus - minus) / (2 * step);
      INFO("parameter " << i << " numeric " << numeric << " analytic " << analytic[i]);
      CHECK(std::fabs(numeric - analytic[i]) <=
            2e-3 + 2e-2 * std::max(std::fabs(numeric), std::fabs(double(analytic[i]))));
      ++checked;
    }
  }
  CHECK(checked > 0);
}


}  // namespace dl::testing
