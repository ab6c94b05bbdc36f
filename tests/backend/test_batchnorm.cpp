// Batch normalization: training and inference forward and the backward pass against
// double-precision formulas, the statistics of the normalized output, the running-statistics
// update, finite-difference checks of dx, dgamma and dbeta, and the same bits on any thread count.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/batchnorm.hpp"
#include "core/random.hpp"
#include "gradient_check.hpp"
#include "op_test_support.hpp"

namespace {

constexpr std::uint64_t kSeed = 2024;
constexpr float kEps = 1e-5f;
constexpr float kDecay = 0.9f;
constexpr double kTolerance = 1e-5;

const dl::BatchNormShape kImageShape{4, 3, 5};  // n, channels, spatial
const dl::BatchNormShape kFlatShape{6, 4, 1};
// Rows long enough for the kernels' vector sums (batchnorm.cpp): runs of whole vectors, a shorter
// run and a few scalars at each row's end, and more than 32 runs per channel, so the float lanes
// are added into the double ones and restarted mid-channel.
const dl::BatchNormShape kLaneShape{40, 3, 150};

std::size_t total(const dl::BatchNormShape& s) {
  return static_cast<std::size_t>(s.n) * s.channels * s.spatial;
}
std::size_t index(const dl::BatchNormShape& s, int i, int c, int k) {
  return (static_cast<std::size_t>(i) * s.channels + c) * s.spatial + k;
}

std::vector<float> random_values(std::size_t n, std::uint64_t stream, double mean, double sd) {
  dl::RandomStream rng(kSeed, stream);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(mean + sd * rng.normal());
  return v;
}

struct ChannelStats {
  std::vector<double> mean, biased_var;
};

ChannelStats stats_of(const dl::BatchNormShape& s, const std::vector<float>& x) {
  ChannelStats st{std::vector<double>(s.channels, 0.0), std::vector<double>(s.channels, 0.0)};
  const double m = static_cast<double>(s.n) * s.spatial;
  for (int c = 0; c < s.channels; ++c) {
    for (int i = 0; i < s.n; ++i)
      for (int k = 0; k < s.spatial; ++k) st.mean[c] += x[index(s, i, c, k)];
    st.mean[c] /= m;
    for (int i = 0; i < s.n; ++i)
      for (int k = 0; k < s.spatial; ++k) {
        const double d = x[index(s, i, c, k)] - st.mean[c];
        st.biased_var[c] += d * d;
      }
    st.biased_var[c] /= m;
  }
  return st;
}

struct Params {
  std::vector<float> gamma, beta, running_mean, running_var;
};

Params random_params(const dl::BatchNormShape& s) {
  Params p{random_values(s.channels, 10, 1.0, 0.3), random_values(s.channels, 11, 0.0, 0.5),
           random_values(s.channels, 12, 0.0, 1.0), std::vector<float>(s.channels)};
  const std::vector<float> v = random_values(s.channels, 13, 0.0, 1.0);
  for (int c = 0; c < s.channels; ++c) p.running_var[c] = 0.5f + std::fabs(v[c]);
  return p;
}

struct TrainingOutput {
  std::vector<float> y, running_mean, running_var, save_mean, save_inv_std, affine;
};

// a: the activation fused after the normalization (the identity: none).
TrainingOutput train_forward(const dl::BatchNormShape& s, const std::vector<float>& x,
                             const Params& p, dl::Activation a = dl::Activation::kIdentity) {
  TrainingOutput o{std::vector<float>(x.size()),
                   p.running_mean,
                   p.running_var,
                   std::vector<float>(s.channels),
                   std::vector<float>(s.channels),
                   std::vector<float>(2 * s.channels)};
  dl::cpu::batchnorm_forward_training(s, a, kEps, kDecay, x.data(), p.gamma.data(), p.beta.data(),
                                      o.y.data(), o.running_mean.data(), o.running_var.data(),
                                      o.save_mean.data(), o.save_inv_std.data(), o.affine.data());
  return o;
}

std::string name_of(const dl::BatchNormShape& s) {
  return std::to_string(s.n) + "x" + std::to_string(s.channels) + "x" + std::to_string(s.spatial);
}

}  // namespace

TEST_CASE("batchnorm training forward matches the formula", "[batchnorm]") {
  for (const dl::BatchNormShape& s : {kImageShape, kFlatShape, kLaneShape}) {
    INFO(name_of(s));
    const std::vector<float> x = random_values(total(s), 1, 3.0, 2.0);
    const Params p = random_params(s);
    const TrainingOutput o = train_forward(s, x, p);
    const ChannelStats st = stats_of(s, x);
    const double m = static_cast<double>(s.n) * s.spatial;
    for (int c = 0; c < s.channels; ++c) {
      const double inv_std = 1.0 / std::sqrt(st.biased_var[c] + kEps);
      CHECK(o.save_mean[c] == Approx(st.mean[c]).epsilon(kTolerance));
      CHECK(o.save_inv_std[c] == Approx(inv_std).epsilon(kTolerance));
      // running = decay * running + (1 - decay) * batch, with the unbiased batch variance.
      CHECK(o.running_mean[c] ==
            Approx(kDecay * p.running_mean[c] + (1 - kDecay) * st.mean[c]).epsilon(kTolerance));
      const double unbiased = st.biased_var[c] * m / (m - 1);
      CHECK(o.running_var[c] ==
            Approx(kDecay * p.running_var[c] + (1 - kDecay) * unbiased).epsilon(kTolerance));
      for (int i = 0; i < s.n; ++i)
        for (int k = 0; k < s.spatial; ++k) {
          const std::size_t at = index(s, i, c, k);
          const double expected = p.gamma[c] * (x[at] - st.mean[c]) * inv_std + p.beta[c];
          CHECK(o.y[at] == Approx(expected).margin(kTolerance).epsilon(kTolerance));
        }
    }
  }
}

TEST_CASE("batchnorm output has zero mean and unit variance per channel", "[batchnorm]") {
  const dl::BatchNormShape s{16, 3, 9};
  const std::vector<float> x = random_values(total(s), 2, -5.0, 4.0);
  Params p = random_params(s);
  p.gamma.assign(s.channels, 1.0f);
  p.beta.assign(s.channels, 0.0f);
  const TrainingOutput o = train_forward(s, x, p);
  const ChannelStats st = stats_of(s, o.y);
  for (int c = 0; c < s.channels; ++c) {
    CHECK(st.mean[c] == Approx(0.0).margin(1e-5));
    // Variance var / (var + eps): 1 up to eps / var.
    CHECK(st.biased_var[c] == Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("batchnorm running statistics converge to the data's statistics", "[batchnorm]") {
  // Repeating the same batch: running = batch + decay^t (initial - batch) -> the batch values.
  const dl::BatchNormShape s{8, 2, 4};
  const std::vector<float> x = random_values(total(s), 3, 2.0, 3.0);
  Params p = random_params(s);
  p.running_mean.assign(s.channels, 0.0f);
  p.running_var.assign(s.channels, 1.0f);
  const int steps = 3;
  for (int t = 0; t < steps; ++t) {
    const TrainingOutput o = train_forward(s, x, p);
    p.running_mean = o.running_mean;
    p.running_var = o.running_var;
  }
  const ChannelStats st = stats_of(s, x);
  const double m = static_cast<double>(s.n) * s.spatial;
  const double remaining = std::pow(static_cast<double>(kDecay), steps);
  for (int c = 0; c < s.channels; ++c) {
    const double unbiased = st.biased_var[c] * m / (m - 1);
    CHECK(p.running_mean[c] == Approx(st.mean[c] * (1 - remaining)).epsilon(1e-4));
    CHECK(p.running_var[c] == Approx(unbiased + remaining * (1.0 - unbiased)).epsilon(1e-4));
  }
}

TEST_CASE("batchnorm inference uses the running statistics", "[batchnorm]") {
  for (const dl::BatchNormShape& s : {kImageShape, kFlatShape, kLaneShape}) {
    INFO(name_of(s));
    const std::vector<float> x = random_values(total(s), 4, 1.0, 2.0);
    const Params p = random_params(s);
    std::vector<float> y(x.size());
    dl::cpu::batchnorm_forward_inference(s, dl::Activation::kIdentity, kEps, x.data(),
                                         p.gamma.data(), p.beta.data(), p.running_mean.data(),
                                         p.running_var.data(), y.data());
    for (int c = 0; c < s.channels; ++c)
      for (int i = 0; i < s.n; ++i)
        for (int k = 0; k < s.spatial; ++k) {
          const std::size_t at = index(s, i, c, k);
          const double expected = p.gamma[c] * (x[at] - p.running_mean[c]) /
                                      std::sqrt(static_cast<double>(p.running_var[c]) + kEps) +
                                  p.beta[c];
          CHECK(y[at] == Approx(expected).margin(kTolerance).epsilon(kTolerance));
        }
  }
}

TEST_CASE("batchnorm backward passes a finite-difference check", "[batchnorm][gradient]") {
  for (const dl::BatchNormShape& s : {kImageShape, kFlatShape}) {
    std::vector<float> x = random_values(total(s), 5, 0.5, 1.5);
    const std::vector<float> r = random_values(total(s), 6, 0.0, 1.0);
    Params p = random_params(s);
    const TrainingOutput o = train_forward(s, x, p);
    std::vector<float> dx(x.size()), dgamma(s.channels), dbeta(s.channels);
    dl::cpu::batchnorm_backward(s, dl::Activation::kIdentity, x.data(), r.data(), p.gamma.data(),
                                o.save_mean.data(), o.save_inv_std.data(), nullptr, dx.data(),
                                dgamma.data(), dbeta.data());

    const auto weighted_output = [&](const std::vector<float>& in, const Params& params) {
      const TrainingOutput out = train_forward(s, in, params);
      double sum = 0;
      for (std::size_t i = 0; i < out.y.size(); ++i) sum += static_cast<double>(out.y[i]) * r[i];
      return sum;
    };
    dl::testing::check_gradient(
        "batchnorm dx " + name_of(s), x, dx,
        [&](const std::vector<float>& in) { return weighted_output(in, p); });
    dl::testing::check_gradient("batchnorm dgamma " + name_of(s), p.gamma, dgamma,
                                [&](const std::vector<float>& gamma) {
                                  Params q = p;
                                  q.gamma = gamma;
                                  return weighted_output(x, q);
                                });
    dl::testing::check_gradient("batchnorm dbeta " + name_of(s), p.beta, dbeta,
                                [&](const std::vector<float>& beta) {
                                  Params q = p;
                                  q.beta = beta;
                                  return weighted_output(x, q);
                                });
  }
}

TEST_CASE("batchnorm statistics stay exact far from zero", "[batchnorm]") {
  // Mean 1000, std 0.5: a one-pass E[x^2] - E[x]^2 in float would lose the variance entirely.
  const dl::BatchNormShape s = kLaneShape;
  const std::vector<float> x = random_values(total(s), 7, 1000.0, 0.5);
  const TrainingOutput o = train_forward(s, x, random_params(s));
  const ChannelStats st = stats_of(s, x);
  for (int c = 0; c < s.channels; ++c) {
    CHECK(o.save_mean[c] == Approx(st.mean[c]).epsilon(kTolerance));
    CHECK(o.save_inv_std[c] ==
          Approx(1.0 / std::sqrt(st.biased_var[c] + kEps)).epsilon(kTolerance));
  }
}

TEST_CASE("batchnorm backward matches the formula", "[batchnorm][gradient]") {
  // The header's formulas in double, from the saved statistics; the finite-difference check above
  // covers the small shapes, this one also the vector sums' rows.
  for (const dl::BatchNormShape& s : {kImageShape, kFlatShape, kLaneShape}) {
    INFO(name_of(s));
    const std::vector<float> x = random_values(total(s), 8, -1.0, 2.0);
    const std::vector<float> dy = random_values(total(s), 9, 0.2, 1.0);
    const Params p = random_params(s);
    const TrainingOutput o = train_forward(s, x, p);
    std::vector<float> dx(x.size()), dgamma(s.channels), dbeta(s.channels);
    dl::cpu::batchnorm_backward(s, dl::Activation::kIdentity, x.data(), dy.data(), p.gamma.data(),
                                o.save_mean.data(), o.save_inv_std.data(), nullptr, dx.data(),
                                dgamma.data(), dbeta.data());
    const double m = static_cast<double>(s.n) * s.spatial;
    for (int c = 0; c < s.channels; ++c) {
      const auto xhat = [&](std::size_t at) {
        return (x[at] - static_cast<double>(o.save_mean[c])) * o.save_inv_std[c];
      };
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (int i = 0; i < s.n; ++i)
        for (int k = 0; k < s.spatial; ++k) {
          const std::size_t at = index(s, i, c, k);
          sum_dy += dy[at];
          sum_dy_xhat += dy[at] * xhat(at);
        }
      CHECK(dbeta[c] == Approx(sum_dy).epsilon(kTolerance));
      CHECK(dgamma[c] == Approx(sum_dy_xhat).margin(kTolerance).epsilon(kTolerance));
      const double a = p.gamma[c] * static_cast<double>(o.save_inv_std[c]) / m;
      for (int i = 0; i < s.n; ++i)
        for (int k = 0; k < s.spatial; ++k) {
          const std::size_t at = index(s, i, c, k);
          const double expected = a * (m * dy[at] - sum_dy - xhat(at) * sum_dy_xhat);
          CHECK(dx[at] == Approx(expected).margin(kTolerance).epsilon(kTolerance));
        }
    }
  }
}

TEST_CASE("batchnorm gives the same bits on 1, 2, 3, 4, 8 and 16 threads", "[batchnorm]") {
  // Channels of one task each (a CIFAR plane), several channels per task (a flat layer of many
  // features), and rows with vector runs and scalar ends; alone and with a fused activation.
  const dl::Activation a =
      GENERATE(dl::Activation::kIdentity, dl::Activation::kRelu, dl::Activation::kTanh);
  for (const dl::BatchNormShape& s :
       {dl::BatchNormShape{16, 12, 32 * 32}, dl::BatchNormShape{64, 600, 1}, kLaneShape}) {
    INFO(name_of(s) << ", activation " << static_cast<int>(a));
    const std::vector<float> x = random_values(total(s), 14, 0.5, 2.0);
    const std::vector<float> dy = random_values(total(s), 15, 0.0, 1.0);
    const Params p = random_params(s);
    // y: every output of both forward ops, one after another; dw, db: dgamma, dbeta.
    const auto run = [&](int threads) {
      const dl::testing::BlasThreads pool(threads);
      const TrainingOutput o = train_forward(s, x, p, a);
      dl::testing::LayerPass r{o.y, std::vector<float>(x.size()), std::vector<float>(s.channels),
                               std::vector<float>(s.channels)};
      for (const std::vector<float>* v :
           {&o.running_mean, &o.running_var, &o.save_mean, &o.save_inv_std, &o.affine})
        r.y.insert(r.y.end(), v->begin(), v->end());
      std::vector<float> inferred(x.size());
      dl::cpu::batchnorm_forward_inference(s, a, kEps, x.data(), p.gamma.data(), p.beta.data(),
                                           p.running_mean.data(), p.running_var.data(),
                                           inferred.data());
      r.y.insert(r.y.end(), inferred.begin(), inferred.end());
      dl::cpu::batchnorm_backward(s, a, x.data(), dy.data(), p.gamma.data(), o.save_mean.data(),
                                  o.save_inv_std.data(), o.affine.data(), r.dx.data(), r.dw.data(),
                                  r.db.data());
      return r;
    };
    dl::testing::check_same_bits_on_any_thread_count(run);
  }
}
