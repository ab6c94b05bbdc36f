// Fused output activation + loss: values against plain double-precision formulas, dz against
// finite differences of the op's own loss, and numerically hostile inputs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/output_loss.hpp"
#include "backend/op_test_support.hpp"
#include "core/random.hpp"
#include "gradient_check.hpp"

namespace {

using dl::Activation;
using dl::LossFunction;

constexpr int kSamples = 4;
constexpr int kClasses = 5;
constexpr std::uint64_t kSeed = 99;
constexpr float kGradScale = 0.25f;
constexpr double kTolerance = 1e-5;

struct Case {
  LossFunction loss;
  Activation act;
  const char* name;
};

// The (loss, activation) pairs a model can meaningfully use.
const Case kCases[] = {
    {LossFunction::kNegativeLogLikelihood, Activation::kSoftmax, "nll/softmax"},
    {LossFunction::kMcxent, Activation::kSoftmax, "mcxent/softmax"},
    {LossFunction::kNegativeLogLikelihood, Activation::kSigmoid, "nll/sigmoid"},
    {LossFunction::kMcxent, Activation::kSigmoid, "mcxent/sigmoid"},
    {LossFunction::kMse, Activation::kIdentity, "mse/identity"},
    {LossFunction::kMse, Activation::kSoftmax, "mse/softmax"},
    {LossFunction::kMse, Activation::kSigmoid, "mse/sigmoid"},
    {LossFunction::kMse, Activation::kTanh, "mse/tanh"},
};

std::vector<float> random_logits(std::uint64_t stream) {
  dl::RandomStream rng(kSeed, stream);
  std::vector<float> z(kSamples * kClasses);
  for (float& v : z) v = static_cast<float>(2.0 * rng.normal());
  return z;
}

std::vector<std::int32_t> random_labels(std::uint64_t stream) {
  dl::RandomStream rng(kSeed, stream);
  std::vector<std::int32_t> labels(kSamples);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(kClasses));
  return labels;
}

struct Reference {
  std::vector<double> a, dz;
  double loss_sum = 0;
};

// Textbook formulas in double: a = act(z), loss from its definition, dz by the chain rule with
// the activation's full Jacobian.
Reference reference(const Case& c, const std::vector<float>& z,
                    const std::vector<std::int32_t>& labels) {
  Reference ref;
  ref.a.resize(z.size());
  ref.dz.resize(z.size());
  for (int s = 0; s < kSamples; ++s) {
    const float* zs = z.data() + s * kClasses;
    double* a = ref.a.data() + s * kClasses;
    double total = 0;
    for (int j = 0; j < kClasses; ++j) total += std::exp(static_cast<double>(zs[j]));
    for (int j = 0; j < kClasses; ++j) {
      const double v = zs[j];
      switch (c.act) {
        case Activation::kSoftmax:
          a[j] = std::exp(v) / total;
          break;
        case Activation::kSigmoid:
          a[j] = 1.0 / (1.0 + std::exp(-v));
          break;
        case Activation::kTanh:
          a[j] = std::tanh(v);
          break;
        default:
          a[j] = v;
          break;
      }
    }
    std::vector<double> dl_da(kClasses);
    for (int j = 0; j < kClasses; ++j) {
      const double y = j == labels[s] ? 1.0 : 0.0;
      if (c.loss == LossFunction::kMse) {
        ref.loss_sum += (a[j] - y) * (a[j] - y) / kClasses;
        dl_da[j] = 2.0 * (a[j] - y) / kClasses;
      } else {
        if (y > 0) ref.loss_sum += -std::log(a[j]);
        dl_da[j] = -y / a[j];
      }
    }
    for (int i = 0; i < kClasses; ++i) {
      double g = 0;
      for (int j = 0; j < kClasses; ++j) {
        double da_j_dz_i = 0;
        if (c.act == Activation::kSoftmax) {
          da_j_dz_i = a[j] * ((i == j ? 1.0 : 0.0) - a[i]);
        } else if (i == j) {
          da_j_dz_i = c.act == Activation::kSigmoid ? a[j] * (1 - a[j])
                      : c.act == Activation::kTanh  ? 1 - a[j] * a[j]
                                                    : 1.0;
        }
        g += dl_da[j] * da_j_dz_i;
      }
      ref.dz[s * kClasses + i] = kGradScale * g;
    }
  }
  return ref;
}

struct Result {
  std::vector<float> out, dz;
  float loss_sum = 0;
};

Result run(const Case& c, const std::vector<float>& z, const std::vector<std::int32_t>& labels) {
  Result r;
  r.out.resize(z.size());
  r.dz.resize(z.size());
  dl::cpu::output_loss({c.loss, c.act}, kSamples, kClasses, z.data(), labels.data(), r.out.data(),
                       r.dz.data(), kGradScale, &r.loss_sum);
  return r;
}

}  // namespace

TEST_CASE("output_loss matches the textbook formulas", "[output_loss]") {
  const std::vector<float> z = random_logits(1);
  const std::vector<std::int32_t> labels = random_labels(2);
  for (const Case& c : kCases) {
    INFO(c.name);
    const Result r = run(c, z, labels);
    const Reference ref = reference(c, z, labels);
    CHECK(r.loss_sum == Approx(ref.loss_sum).epsilon(kTolerance));
    for (std::size_t i = 0; i < z.size(); ++i) {
      INFO("index " << i);
      CHECK(r.out[i] == Approx(ref.a[i]).margin(kTolerance).epsilon(kTolerance));
      CHECK(r.dz[i] == Approx(ref.dz[i]).margin(kTolerance).epsilon(1e-4));
    }
  }
}

TEST_CASE("output_loss dz passes a finite-difference check", "[output_loss][gradient]") {
  std::vector<float> z = random_logits(3);
  const std::vector<std::int32_t> labels = random_labels(4);
  for (const Case& c : kCases) {
    const Result r = run(c, z, labels);
    // dz is grad_scale times the gradient of the summed loss.
    const auto scaled_loss = [&](const std::vector<float>& in) {
      return kGradScale * static_cast<double>(run(c, in, labels).loss_sum);
    };
    dl::testing::check_gradient(c.name, z, r.dz, scaled_loss);
  }
}

TEST_CASE("NEGATIVELOGLIKELIHOOD and MCXENT are the same loss", "[output_loss]") {
  const std::vector<float> z = random_logits(5);
  const std::vector<std::int32_t> labels = random_labels(6);
  for (Activation act : {Activation::kSoftmax, Activation::kSigmoid}) {
    const Result nll = run({LossFunction::kNegativeLogLikelihood, act, "nll"}, z, labels);
    const Result mcxent = run({LossFunction::kMcxent, act, "mcxent"}, z, labels);
    CHECK(nll.loss_sum == mcxent.loss_sum);
    CHECK(nll.out == mcxent.out);
    CHECK(nll.dz == mcxent.dz);
  }
}

TEST_CASE("softmax cross-entropy stays finite for extreme logits", "[output_loss]") {
  // Sample 0's label has probability exp(-2000): its log must come from log-softmax, not log(0).
  const std::vector<float> z = {1000.0f, -1000.0f, 0.0f, 5.0f, 5.0f, 5.0f};
  const std::vector<std::int32_t> labels = {1, 2};
  std::vector<float> out(z.size()), dz(z.size());
  float loss_sum = 0;
  dl::cpu::output_loss({LossFunction::kMcxent, Activation::kSoftmax}, 2, 3, z.data(), labels.data(),
                       out.data(), dz.data(), 1.0f, &loss_sum);
  // -log softmax(z)_1 = 2000 for sample 0, log 3 for the uniform sample 1.
  CHECK(loss_sum == Approx(2000.0 + std::log(3.0)).epsilon(kTolerance));
  CHECK(dz[0] == Approx(1.0).epsilon(kTolerance));
  CHECK(dz[1] == Approx(-1.0).epsilon(kTolerance));
  CHECK(dz[5] == Approx(1.0 / 3.0 - 1.0).epsilon(kTolerance));
  CHECK(out[1] == 0.0f);
}

TEST_CASE("cross-entropy on a non-softmax output clamps the probability", "[output_loss]") {
  // sigmoid(-200) underflows to 0: the loss uses kMinLogProbability instead of log(0).
  const std::vector<float> z = {-200.0f, 0.0f};
  const std::vector<std::int32_t> labels = {0};
  std::vector<float> out(z.size()), dz(z.size());
  float loss_sum = 0;
  dl::cpu::output_loss({LossFunction::kMcxent, Activation::kSigmoid}, 1, 2, z.data(), labels.data(),
                       out.data(), dz.data(), 1.0f, &loss_sum);
  CHECK(loss_sum ==
        Approx(-std::log(static_cast<double>(dl::cpu::kMinLogProbability))).epsilon(kTolerance));
  CHECK(std::isfinite(dz[0]));
  CHECK(dz[1] == 0.0f);  // only the label's probability enters the loss
}

TEST_CASE("output_loss allows out to alias z", "[output_loss]") {
  const std::vector<float> z = random_logits(7);
  const std::vector<std::int32_t> labels = random_labels(8);
  for (const Case& c : kCases) {
    INFO(c.name);
    const Result separate = run(c, z, labels);
    std::vector<float> buffer = z;
    std::vector<float> dz(z.size());
    float loss_sum = 0;
    dl::cpu::output_loss({c.loss, c.act}, kSamples, kClasses, buffer.data(), labels.data(),
                         buffer.data(), dz.data(), kGradScale, &loss_sum);
    CHECK(buffer == separate.out);
    CHECK(dz == separate.dz);
    CHECK(loss_sum == separate.loss_sum);
  }
}

TEST_CASE("count_correct: rows whose first largest output is the label", "[output_loss]") {
  dl::CpuBackend backend;
  const std::vector<float> out{0.1f, 0.7f, 0.2f,   // predicts 1
                               0.5f, 0.5f, 0.0f,   // a tie: predicts 0 (the first maximum)
                               0.0f, 0.1f, 0.9f,   // predicts 2
                               0.3f, 0.3f, 0.4f};  // predicts 2
  const std::vector<std::int32_t> labels{1, 1, 2, 0};
  float count = -1.0f;
  backend.count_correct(4, 3, out.data(), labels.data(), &count);
  CHECK(count == 2.0f);
  backend.count_correct(0, 3, out.data(), labels.data(), &count);
  CHECK(count == 0.0f);
}

// Softmax cross-entropy runs in tasks of 32 rows with the row losses added in row order: 100 rows
// (4 tasks, the last one short) give the same bits on 1, 2 and 3 threads.
TEST_CASE("softmax cross-entropy is bit-identical on any thread count", "[output_loss]") {
  constexpr int kRows = 100;
  constexpr int kOutputs = 10;
  dl::RandomStream rng(kSeed, 11);
  std::vector<float> z(kRows * kOutputs);
  for (float& v : z) v = static_cast<float>(3.0 * rng.normal());
  std::vector<std::int32_t> labels(kRows);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(kOutputs));
  const auto pass = [&](int threads) {
    const dl::testing::BlasThreads blas(threads);
    std::vector<float> out(z.size()), dz(z.size());
    float loss_sum = 0;
    dl::cpu::output_loss({LossFunction::kMcxent, Activation::kSoftmax}, kRows, kOutputs, z.data(),
                         labels.data(), out.data(), dz.data(), kGradScale, &loss_sum);
    out.push_back(loss_sum);
    out.insert(out.end(), dz.begin(), dz.end());
    return out;
  };
  const std::vector<float> one = pass(1);
  CHECK(pass(2) == one);
  CHECK(pass(3) == one);
}
