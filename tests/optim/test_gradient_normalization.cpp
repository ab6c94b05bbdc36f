// Gradient normalization (DL4J's gradientNormalization plus a global-norm clip) and AdamW, through
// the Optimizer on the CPU backend, against naive double-precision references written here from
// the definitions in config.hpp; and the two backend ops they use.
#include <cmath>
#include <map>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"

namespace dl {
namespace {

constexpr double kTolerance = 1e-6;

// Three layers: [W0 x3 | b0 x1] [W1 x2 | b1 x2] [gamma, beta | running stats x2, frozen].
std::vector<ParameterSegment> segments() {
  std::vector<ParameterSegment> s = {{0, 3, false, true},  {3, 1, true, true},  {4, 2, false, true},
                                     {6, 2, true, true},   {8, 1, false, true}, {9, 1, true, true},
                                     {10, 2, false, false}};
  const int layer_of[] = {0, 0, 1, 1, 2, 2, 2};
  for (std::size_t i = 0; i < s.size(); ++i) s[i].layer = layer_of[i];
  return s;
}
constexpr std::size_t kCount = 12;
// Layer norms: sqrt(9+16+0+144) = 13, sqrt(0.01+0.04+0.04+0.01) ~ 0.316, sqrt(4+0.25) ~ 2.06.
const std::vector<float> kGradient = {3, -4, 0, 12, 0.1f, -0.2f, 0.2f, 0.1f, 2, 0.5f, 9, 9};
const std::vector<float> kParams = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

// The gradient an SGD step with learning rate 1 and no L2 applied, read back from the parameters.
std::vector<float> normalized(GradientNormalization mode, double threshold) {
  CpuBackend backend;
  Config config;
  config.updater.type = UpdaterType::kSgd;
  config.updater.learningRate = 1.0;
  config.gradientNormalization = mode;
  config.gradientNormalizationThreshold = threshold;
  Optimizer optimizer(backend, config, segments(), kCount, 1);
  std::vector<float> params = kParams, grads = kGradient;
  optimizer.step(params.data(), grads.data(), 0);
  std::vector<float> applied(kCount);
  for (std::size_t i = 0; i < kCount; ++i) applied[i] = kParams[i] - params[i];
  return applied;
}

// Reference: scale [begin, end) of g to the norm t (clip: only when above t).
void scale_range(std::vector<double>& g, std::size_t begin, std::size_t end, double t,
                 bool always) {
  double sum = 0.0;
  for (std::size_t i = begin; i < end; ++i) sum += g[i] * g[i];
  const double norm = std::sqrt(sum);
  if (norm == 0.0 || (!always && norm <= t)) return;
  for (std::size_t i = begin; i < end; ++i) g[i] *= t / norm;
}

std::vector<double> reference(GradientNormalization mode, double t) {
  std::vector<double> g(kGradient.begin(), kGradient.end());
  g[10] = g[11] = 0.0;  // frozen: zeroed before anything else
  const std::vector<std::pair<std::size_t, std::size_t>> layers = {{0, 4}, {4, 8}, {8, 10}};
  const std::vector<std::pair<std::size_t, std::size_t>> tensors = {{0, 3}, {3, 4}, {4, 6},
                                                                    {6, 8}, {8, 9}, {9, 10}};
  switch (mode) {
    case GradientNormalization::kNone:
      break;
    case GradientNormalization::kClipElementWiseAbsoluteValue:
      for (double& v : g) v = std::max(-t, std::min(t, v));
      break;
    case GradientNormalization::kClipL2Global:
      scale_range(g, 0, kCount, t, false);
      break;
    case GradientNormalization::kClipL2PerLayer:
    case GradientNormalization::kRenormalizeL2PerLayer:
      for (const auto& [b, e] : layers)
        scale_range(g, b, e, mode == GradientNormalization::kClipL2PerLayer ? t : 1.0,
                    mode == GradientNormalization::kRenormalizeL2PerLayer);
      break;
    case GradientNormalization::kClipL2PerParamType:
    case GradientNormalization::kRenormalizeL2PerParamType:
      for (const auto& [b, e] : tensors)
        scale_range(g, b, e, mode == GradientNormalization::kClipL2PerParamType ? t : 1.0,
                    mode == GradientNormalization::kRenormalizeL2PerParamType);
      break;
  }
  return g;
}

void require_close(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i);
    REQUIRE(got[i] == Approx(want[i]).epsilon(kTolerance).margin(kTolerance));
  }
}

}  // namespace

TEST_CASE("gradient normalization: every mode against the naive reference", "[optim][clip]") {
  constexpr double kThreshold = 1.5;  // between the layer norms, so clipping is selective
  for (const GradientNormalization mode :
       {GradientNormalization::kNone, GradientNormalization::kClipElementWiseAbsoluteValue,
        GradientNormalization::kClipL2Global, GradientNormalization::kClipL2PerLayer,
        GradientNormalization::kClipL2PerParamType, GradientNormalization::kRenormalizeL2PerLayer,
        GradientNormalization::kRenormalizeL2PerParamType}) {
    INFO("mode " << static_cast<int>(mode));
    require_close(normalized(mode, kThreshold), reference(mode, kThreshold));
  }
  // The frozen running statistics are never moved.
  const std::vector<float> global = normalized(GradientNormalization::kClipL2Global, 1.5);
  CHECK(global[10] == 0.0f);
  CHECK(global[11] == 0.0f);
  // ClipL2PerLayer leaves the layer below the threshold exactly as it was: the step applied
  // the gradient's own bits.
  const std::vector<float> per_layer = normalized(GradientNormalization::kClipL2PerLayer, 1.5);
  for (std::size_t i = 4; i < 8; ++i)
    CHECK(per_layer[i] == kParams[i] - (kParams[i] - kGradient[i]));
}

TEST_CASE("gradient normalization: before L2, as DL4J applies it", "[optim][clip]") {
  CpuBackend backend;
  Config config;
  config.updater.type = UpdaterType::kSgd;
  config.updater.learningRate = 1.0;
  config.l2 = 0.5;
  config.gradientNormalization = GradientNormalization::kClipElementWiseAbsoluteValue;
  config.gradientNormalizationThreshold = 0.25;
  Optimizer optimizer(backend, config, {{0, 2, false, true, 0}}, 2, 1);
  std::vector<float> params = {2.0f, -4.0f}, grads = {10.0f, -0.1f};
  optimizer.step(params.data(), grads.data(), 0);
  // g = clip(g) + l2 * w: 0.25 + 1 and -0.1 - 2.
  CHECK(params[0] == Approx(2.0 - 1.25));
  CHECK(params[1] == Approx(-4.0 + 2.1));
}

TEST_CASE("backend ops: clip_values and scale_to_norm, zero and non-finite norms",
          "[optim][clip]") {
  CpuBackend backend;
  std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.5f, 3.0f, std::nanf("")};
  backend.clip_values(x.size(), 1.0f, x.data());
  CHECK(x[0] == -1.0f);
  CHECK(x[1] == -0.5f);
  CHECK(x[4] == 1.0f);
  CHECK(std::isnan(x[5]));  // stays visible to all_finite

  std::vector<float> v = {3.0f, 4.0f};
  float sum = 25.0f;
  backend.scale_to_norm(v.size(), &sum, 10.0f, false, v.data());  // below: unchanged
  CHECK(v == std::vector<float>{3.0f, 4.0f});
  backend.scale_to_norm(v.size(), &sum, 1.0f, false, v.data());  // above: to norm 1
  CHECK(v[0] == Approx(0.6));
  CHECK(v[1] == Approx(0.8));
  std::vector<float> zero = {0.0f, 0.0f};
  float zero_sum = 0.0f;
  backend.scale_to_norm(zero.size(), &zero_sum, 1.0f, true, zero.data());
  CHECK(zero == std::vector<float>{0.0f, 0.0f});
  std::vector<float> w = {1.0f, 2.0f};
  float inf_sum = INFINITY;
  backend.scale_to_norm(w.size(), &inf_sum, 1.0f, true, w.data());
  CHECK(w == std::vector<float>{1.0f, 2.0f});
}

TEST_CASE("AdamW: decoupled weight decay against the naive reference", "[optim][adamw]") {
  constexpr double kLr = 0.01, kDecay = 0.1, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  CpuBackend backend;
  Config config;
  config.updater.type = UpdaterType::kAdamW;
  config.updater.learningRate = kLr;
  config.updater.weightDecay = kDecay;
  // Weights, a bias and a frozen running statistic (which must not decay).
  const std::vector<ParameterSegment> segs = {
      {0, 2, false, true}, {2, 1, true, true}, {3, 1, false, false}};
  Optimizer optimizer(backend, config, segs, 4, 100);
  std::vector<float> params = {1.0f, -2.0f, 0.5f, 7.0f};
  const std::vector<std::vector<float>> gradients = {
      {0.3f, -0.1f, 0.2f, 1.0f}, {-0.2f, 0.4f, 0.1f, 1.0f}, {0.05f, 0.05f, -0.3f, 1.0f}};
  std::vector<double> p = {1.0, -2.0, 0.5, 7.0}, m(4, 0.0), v(4, 0.0);
  for (std::size_t step = 0; step < gradients.size(); ++step) {
    std::vector<float> g = gradients[step];
    optimizer.step(params.data(), g.data(), static_cast<std::int64_t>(step));
    const double t = static_cast<double>(step + 1);
    const double alpha = kLr * std::sqrt(1 - std::pow(kBeta2, t)) / (1 - std::pow(kBeta1, t));
    for (std::size_t i = 0; i < 3; ++i) {
      const double gi = gradients[step][i];
      p[i] *= 1.0 - kLr * kDecay;  // decoupled: from the parameter, not through m and v
      m[i] = kBeta1 * m[i] + (1 - kBeta1) * gi;
      v[i] = kBeta2 * v[i] + (1 - kBeta2) * gi * gi;
      p[i] -= alpha * m[i] / (std::sqrt(v[i]) + kEps);
    }
  }
  require_close(params, p);
  CHECK(params[3] == 7.0f);

  // One step of Adam and of AdamW from the same point differ by lr * weightDecay * p exactly
  // where the parameters are trainable.
  Optimizer adamw(backend, config, segs, 4, 100);
  config.updater.type = UpdaterType::kAdam;
  Optimizer adam(backend, config, segs, 4, 100);
  CHECK(adam.state_floats() == adamw.state_floats());
  std::vector<float> with_decay = {1.0f, -2.0f, 0.5f, 7.0f}, without = with_decay;
  std::vector<float> g1 = gradients[0], g2 = gradients[0];
  adamw.step(with_decay.data(), g1.data(), 0);
  adam.step(without.data(), g2.data(), 0);
  const std::vector<double> start = {1.0, -2.0, 0.5};
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(with_decay[i] == Approx(without[i] - kLr * kDecay * start[i]).epsilon(kTolerance));
  CHECK(with_decay[3] == without[3]);
}

TEST_CASE("AdamW: weightDecayBias false decays the weights only", "[optim][adamw]") {
  constexpr double kLr = 0.01, kDecay = 0.1;
  CpuBackend backend;
  Config config;
  config.updater.type = UpdaterType::kAdamW;
  config.updater.learningRate = kLr;
  config.updater.weightDecay = kDecay;
  const std::vector<ParameterSegment> segs = {
      {0, 2, false, true}, {2, 1, true, true}, {3, 1, false, false}};
  const std::vector<float> start = {1.0f, -2.0f, 0.5f, 7.0f};
  // Zero gradients: Adam moves nothing, so what changes is the decay alone.
  auto step = [&](bool decay_bias) {
    config.updater.weightDecayBias = decay_bias;
    Optimizer optimizer(backend, config, segs, 4, 100);
    std::vector<float> params = start, g(4, 0.0f);
    optimizer.step(params.data(), g.data(), 0);
    return params;
  };
  const std::vector<float> all = step(true), weights_only = step(false);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(all[i] == Approx(start[i] * (1 - kLr * kDecay)).epsilon(kTolerance));
    CHECK(weights_only[i] == all[i]);
  }
  CHECK(all[2] == Approx(start[2] * (1 - kLr * kDecay)).epsilon(kTolerance));
  CHECK(weights_only[2] == start[2]);
  CHECK(all[3] == start[3]);
  CHECK(weights_only[3] == start[3]);
}

TEST_CASE("Optimizer from a Config: the schedule's length is the run's", "[optim][schedule]") {
  CpuBackend backend;
  Config config;
  config.updater.type = UpdaterType::kSgd;
  config.updater.learningRate = 0.1;
  config.schedule.type = LearningRateSchedule::kCosine;
  Optimizer optimizer(backend, config, {{0, 1, false, true}}, 1, 40);
  CHECK(optimizer.schedule().totalIterations == 40);
  CHECK(optimizer.learning_rate(20) == Approx(0.05));
  CHECK(optimizer.learning_rate(40) == 0.0);
  CHECK_THAT(optimizer.describe(), Catch::Matchers::Contains("schedule cosine over 40 iterations"));
}

}  // namespace dl
