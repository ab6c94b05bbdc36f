// The whole-model finite-difference check shared by the chain and graph tests: the summed loss of
// a small batch, perturbed one parameter at a time, against the backward pass's gradients.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "fixed_batch.hpp"
#include "nn/model.hpp"

namespace dl::testing {

constexpr int kBatch = 3;

struct Fixture {
  dl::Config config;
  dl::CpuBackend backend;
  dl::Model model;
  FixedBatch data;
  int batch;

  explicit Fixture(const char* yaml, int batch_size = kBatch)
      : config(dl::load_config_string(yaml, "test.yaml")),
        model(config, backend, batch_size),
        batch(batch_size) {
    model.initialize(config.seed);
    data = fixed_batch(model, batch);
    backend.upload(model.labels(), data.labels.data(), data.labels.size() * sizeof(std::int32_t));
  }

  // The summed loss at the current parameters, in training mode at a fixed step (so dropout draws
  // the same mask every time).
  double loss() {
    backend.upload(model.input(), data.images.data(), data.images.size() * sizeof(float));
    model.forward(batch, fixed_training_step());
    model.compute_loss(batch);
    return *model.loss_sum();
  }

  // The summed loss with parameter i moved by `step`, then put back.
  double loss_with(std::size_t i, double step) {
    float* params = model.parameters();
    const float saved = params[i];
    params[i] = static_cast<float>(saved + step);
    const double moved = loss();
    params[i] = saved;
    return moved;
  }

  // Every parameter's gradient from the backward pass, at the current parameters.
  std::vector<float> analytic_gradients() {
    loss();
    model.backward(batch, 1.0f);
    return {model.gradients(), model.gradients() + model.parameter_count()};
  }
};

// A finite difference and an analytic gradient (or two differences) agree: within float noise,
// absolute and relative.
inline bool gradients_agree(double a, double b) {
  return std::fabs(a - b) <= 2e-3 + 2e-2 * std::max(std::fabs(a), std::fabs(b));
}

inline void check_whole_model_gradient(const char* yaml) {
  Fixture f(yaml);
  const std::vector<float> analytic = f.analytic_gradients();
  // Small enough that no perturbation moves a max-pooling winner, large enough for float noise.
  const double step = 1e-3;
  int checked = 0;
  for (const dl::ParameterSegment& s : f.model.segments()) {
    if (!s.trainable) continue;
    for (std::size_t i = s.offset; i < s.offset + s.count; ++i) {
      const double numeric = (f.loss_with(i, step) - f.loss_with(i, -step)) / (2 * step);
      INFO("parameter " << i << " numeric " << numeric << " analytic " << analytic[i]);
      CHECK(gradients_agree(numeric, analytic[i]));
      ++checked;
    }
  }
  CHECK(checked > 0);
}

// For any network, kinks included (max pooling, ReLU): the backward pass's gradient of up to
// `per_segment` parameters of each trainable segment (spread over it) against finite differences.
// A kink near the parameter's value bends the central differences, and one exactly at it (a ReLU
// whose inputs are all zero sees only its zero bias) leaves them at the mean of the two slopes
// while the gradient takes one side's; float rounding, amplified where a batch normalization sees
// nearly equal values, blurs the narrow ones. So the gradient may match any of the central
// differences of three steps and the one-sided differences of either side. Where it matches none,
// those differences must disagree with each other (the loss is not smooth at these scales); a
// gradient that differences all agreeing contradict is wrong. At most a tenth of the parameters
// may be on such ground, so a broken gradient cannot hide there.
inline void check_gradient_across_kinks(const std::string& yaml, int batch,
                                        std::size_t per_segment) {
  Fixture f(yaml.c_str(), batch);
  const std::vector<float> analytic = f.analytic_gradients();
  const double at_values = f.loss();
  constexpr double kCentralSteps[] = {1e-2, 4e-3, 1e-3};
  constexpr double kOneSidedStep = 1e-3;
  int checked = 0, unsmooth = 0;
  for (const dl::ParameterSegment& s : f.model.segments()) {
    if (!s.trainable) continue;
    const std::size_t count = std::min(s.count, per_segment);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = s.offset + k * s.count / count;
      std::vector<double> differences;
      for (double h : kCentralSteps)
        differences.push_back((f.loss_with(i, h) - f.loss_with(i, -h)) / (2 * h));
      differences.push_back((f.loss_with(i, kOneSidedStep) - at_values) / kOneSidedStep);
      differences.push_back((at_values - f.loss_with(i, -kOneSidedStep)) / kOneSidedStep);
      ++checked;
      const double g = analytic[i];
      if (std::any_of(differences.begin(), differences.end(),
                      [&](double d) { return gradients_agree(d, g); }))
        continue;
      const auto [low, high] = std::minmax_element(differences.begin(), differences.end());
      INFO("parameter " << i << ": analytic " << g << ", differences from " << *low << " to "
                        << *high);
      CHECK_FALSE(gradients_agree(*low, *high));
      ++unsmooth;
    }
  }
  INFO(unsmooth << " of " << checked << " parameters where the loss is not smooth");
  CHECK(checked > 0);
  CHECK(unsmooth * 10 <= checked);
}

}  // namespace dl::testing
