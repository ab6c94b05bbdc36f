// Updaters: a few steps on 3-4 parameters against values worked out by hand (in the comments)
// and against the rules written out in double precision, independently of the implementation.
#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/thread_pool.hpp"
#include "backend/cpu/updater.hpp"
#include "backend/cpu/vector_ops.hpp"
#include "backend/op_test_support.hpp"
#include "backend/update_terms_fixture.hpp"

namespace {

using dl::UpdaterHyper;
using dl::UpdaterType;

constexpr double kTolerance = 1e-6;

UpdaterHyper hyper(UpdaterType type, float lr) {
  UpdaterHyper h;
  h.type = type;
  h.learning_rate = lr;
  return h;
}

std::vector<float> state_for(UpdaterType t, std::size_t n, float initial = 0.0f) {
  return std::vector<float>(dl::updater_state_per_parameter(t) * n, initial);
}

void require_close(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("index " << i);
    CHECK(actual[i] == Approx(expected[i]).margin(kTolerance).epsilon(kTolerance));
  }
}

// The gradients of successive steps used by the multi-step cases.
const std::vector<std::vector<float>> kGradients = {
    {0.5f, -1.0f, 2.0f, 0.0f}, {0.25f, -0.5f, -1.0f, 3.0f}, {-1.5f, 0.75f, 0.5f, -0.125f}};
const std::vector<float> kInitialParams = {1.0f, -2.0f, 0.5f, 3.0f};

}  // namespace

TEST_CASE("SGD subtracts lr times the gradient", "[updater]") {
  // p = [1, 2, 3], g = [0.5, -1, 2], lr = 0.1:
  // step 1: [1 - 0.05, 2 + 0.1, 3 - 0.2] = [0.95, 2.1, 2.8]; step 2: [0.9, 2.2, 2.6].
  UpdaterHyper h = hyper(UpdaterType::kSgd, 0.1f);
  std::vector<float> p = {1.0f, 2.0f, 3.0f};
  const std::vector<float> g = {0.5f, -1.0f, 2.0f};
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), nullptr);
  require_close(p, {0.95, 2.1, 2.8});
  h.step = 2;
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), nullptr);
  require_close(p, {0.9, 2.2, 2.6});
}

TEST_CASE("Nesterovs follows DL4J's rule", "[updater]") {
  // momentum 0.9, lr 0.1, v = 0, p = 1, g = 1 on both steps:
  // step 1: v = -0.1;  p += -0.9 * 0 + 1.9 * -0.1 = -0.19        -> p = 0.81
  // step 2: v = 0.9 * -0.1 - 0.1 = -0.19;  p += -0.9 * -0.1 + 1.9 * -0.19 = 0.09 - 0.361
  //         -> p = 0.539
  // The other parameters: g = -2 (mirror image, twice as large) and g = 0 (nothing moves).
  UpdaterHyper h = hyper(UpdaterType::kNesterovs, 0.1f);
  h.momentum = 0.9f;
  std::vector<float> p = {1.0f, 1.0f, 1.0f};
  const std::vector<float> g = {1.0f, -2.0f, 0.0f};
  std::vector<float> v = state_for(h.type, p.size());
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), v.data());
  require_close(p, {0.81, 1.38, 1.0});
  require_close(v, {-0.1, 0.2, 0.0});
  h.step = 2;
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), v.data());
  require_close(p, {0.539, 1.922, 1.0});
  require_close(v, {-0.19, 0.38, 0.0});
}

TEST_CASE("Nesterovs matches the rule in double over several steps", "[updater]") {
  UpdaterHyper h = hyper(UpdaterType::kNesterovs, 0.05f);
  h.momentum = 0.8f;
  std::vector<float> p = kInitialParams;
  std::vector<float> v = state_for(h.type, p.size());
  std::vector<double> ref_p(p.begin(), p.end()), ref_v(p.size(), 0.0);
  for (std::size_t t = 0; t < kGradients.size(); ++t) {
    h.step = static_cast<std::int64_t>(t + 1);
    dl::cpu::updater_step(h, p.size(), p.data(), kGradients[t].data(), v.data());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double mu = h.momentum;
      const double v_prev = ref_v[i];
      ref_v[i] = mu * ref_v[i] - static_cast<double>(h.learning_rate) * kGradients[t][i];
      ref_p[i] += -mu * v_prev + (1 + mu) * ref_v[i];
    }
    require_close(p, ref_p);
    require_close(v, ref_v);
  }
}

TEST_CASE("Adam's first step moves each parameter by about lr", "[updater]") {
  // Step 1: m = 0.1 g, v = 0.001 g^2, alpha_1 = lr sqrt(0.001) / 0.1, so
  // p -= lr sqrt(0.001) |g| sign(g) / (sqrt(0.001) |g| + eps) = lr sign(g) (1 - O(eps / |g|)).
  // lr = 0.01: p = [1, 1, 1] with g = [0.5, -2, 0] -> [0.99, 1.01, 1] (g = 0 leaves p alone).
  UpdaterHyper h = hyper(UpdaterType::kAdam, 0.01f);
  std::vector<float> p = {1.0f, 1.0f, 1.0f};
  const std::vector<float> g = {0.5f, -2.0f, 0.0f};
  std::vector<float> state = state_for(h.type, p.size());
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), state.data());
  require_close(p, {0.99, 1.01, 1.0});
  // State layout: m (0.1 g) then v (0.001 g^2).
  require_close(state, {0.05, -0.2, 0.0, 0.00025, 0.004, 0.0});
}

TEST_CASE("Adam matches DL4J's rule in double over several steps", "[updater]") {
  UpdaterHyper h = hyper(UpdaterType::kAdam, 0.02f);
  h.beta1 = 0.8f;
  h.beta2 = 0.99f;
  h.epsilon = 0.01f;  // large, so that where epsilon enters the formula matters
  const std::size_t n = kInitialParams.size();
  std::vector<float> p = kInitialParams;
  std::vector<float> state = state_for(h.type, n);
  std::vector<double> ref_p(p.begin(), p.end()), ref_m(n, 0.0), ref_v(n, 0.0);
  for (std::size_t t = 0; t < kGradients.size(); ++t) {
    h.step = static_cast<std::int64_t>(t + 1);
    dl::cpu::updater_step(h, n, p.data(), kGradients[t].data(), state.data());
    const double b1 = h.beta1, b2 = h.beta2, eps = h.epsilon;
    const double alpha =
        h.learning_rate * std::sqrt(1 - std::pow(b2, h.step)) / (1 - std::pow(b1, h.step));
    for (std::size_t i = 0; i < n; ++i) {
      const double g = kGradients[t][i];
      ref_m[i] = b1 * ref_m[i] + (1 - b1) * g;
      ref_v[i] = b2 * ref_v[i] + (1 - b2) * g * g;
      ref_p[i] -= alpha * ref_m[i] / (std::sqrt(ref_v[i]) + eps);
    }
    require_close(p, ref_p);
    require_close(std::vector<float>(state.begin(), state.begin() + n), ref_m);
    require_close(std::vector<float>(state.begin() + n, state.end()), ref_v);
  }
}

TEST_CASE("Adam replaces a zero step size by epsilon, as DL4J does", "[updater]") {
  UpdaterHyper h = hyper(UpdaterType::kAdam, 0.0f);
  h.epsilon = 1e-3f;
  CHECK(dl::cpu::adam_step_size(h) == Approx(1e-3));
  h.learning_rate = 0.5f;
  h.step = 2;
  // 0.5 sqrt(1 - 0.999^2) / (1 - 0.9^2)
  CHECK(dl::cpu::adam_step_size(h) == Approx(0.5 * std::sqrt(1 - 0.998001) / 0.19));
}

TEST_CASE("RmsProp follows DL4J's rule", "[updater]") {
  // decay 0.95, lr 0.1, eps 1e-8, s = 0, p = 1, g = 2:
  // step 1: s = 0.05 * 4 = 0.2;  p -= 0.1 * 2 / sqrt(0.2) = 0.4472136  -> 0.5527864
  // step 2 (g = 2 again): s = 0.95 * 0.2 + 0.2 = 0.39;  p -= 0.2 / sqrt(0.39) = 0.3202563
  //         -> 0.2325301
  UpdaterHyper h = hyper(UpdaterType::kRmsProp, 0.1f);
  h.rms_decay = 0.95f;
  std::vector<float> p = {1.0f, 1.0f, 1.0f};
  const std::vector<float> g = {2.0f, -2.0f, 0.0f};
  std::vector<float> s = state_for(h.type, p.size());
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), s.data());
  require_close(s, {0.2, 0.2, 0.0});
  require_close(p, {0.5527864, 1.4472136, 1.0});
  h.step = 2;
  dl::cpu::updater_step(h, p.size(), p.data(), g.data(), s.data());
  require_close(s, {0.39, 0.39, 0.0});
  require_close(p, {0.2325301, 1.7674699, 1.0});
}

TEST_CASE("RmsProp matches the rule in double over several steps", "[updater]") {
  UpdaterHyper h = hyper(UpdaterType::kRmsProp, 0.01f);
  h.rms_decay = 0.9f;
  h.epsilon = 0.05f;  // large, so that where epsilon enters the formula matters
  const std::size_t n = kInitialParams.size();
  std::vector<float> p = kInitialParams;
  // DL4J starts the mean square at epsilon.
  std::vector<float> s = state_for(h.type, n, h.epsilon);
  std::vector<double> ref_p(p.begin(), p.end()), ref_s(n, h.epsilon);
  for (std::size_t t = 0; t < kGradients.size(); ++t) {
    h.step = static_cast<std::int64_t>(t + 1);
    dl::cpu::updater_step(h, n, p.data(), kGradients[t].data(), s.data());
    const double decay = h.rms_decay, eps = h.epsilon;
    for (std::size_t i = 0; i < n; ++i) {
      const double g = kGradients[t][i];
      ref_s[i] = decay * ref_s[i] + (1 - decay) * g * g;
      ref_p[i] -= h.learning_rate * g / (std::sqrt(ref_s[i]) + eps);
    }
    require_close(p, ref_p);
    require_close(s, ref_s);
  }
}

TEST_CASE("updaters over a long buffer: every parameter, the same bits on 1 and 2 threads",
          "[updater]") {
  const UpdaterType type = GENERATE(UpdaterType::kSgd, UpdaterType::kNesterovs, UpdaterType::kAdam,
                                    UpdaterType::kRmsProp);
  INFO("updater " << static_cast<int>(type));
  // Long enough to be split over threads, and odd; the pattern repeats kGradients' values.
  const std::size_t n = 3 * dl::cpu::kMinSlicedElements + 7;
  std::vector<float> p0(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    p0[i] = kInitialParams[i % kInitialParams.size()];
    g[i] = kGradients[0][i % kGradients[0].size()];
  }
  UpdaterHyper h = hyper(type, 0.05f);
  h.momentum = 0.8f;
  h.step = 1;
  struct Result {
    std::vector<float> p, state;
  };
  const auto run = [&](int threads) {
    const dl::testing::BlasThreads blas(threads);
    Result r{p0, state_for(type, n, type == UpdaterType::kRmsProp ? h.epsilon : 0.0f)};
    dl::cpu::updater_step(h, n, r.p.data(), g.data(), r.state.data());
    return r;
  };
  const Result one = run(1), two = run(2);
  CHECK(one.p == two.p);
  CHECK(one.state == two.state);
  // Every parameter moved as its small-buffer twin (the first kInitialParams.size() ones) did.
  const std::size_t period = kInitialParams.size();
  for (std::size_t i = period; i < n; ++i) REQUIRE(two.p[i] == two.p[i % period]);
  for (std::size_t i = 0; i < period; ++i)
    if (g[i] != 0.0f) CHECK(two.p[i] != p0[i]);
}

TEST_CASE("L2 and weight decay inside the updater's pass give the separate passes' bits",
          "[updater]") {
  const auto type = GENERATE(UpdaterType::kSgd, UpdaterType::kNesterovs, UpdaterType::kAdamW,
                             UpdaterType::kRmsProp);
  const int threads = GENERATE(1, 3);
  INFO("updater " << static_cast<int>(type) << ", " << threads << " threads");
  // Several thread ranges, with term ranges that cross their boundaries.
  const std::size_t n = 3 * dl::cpu::kMinSlicedElements + 7;
  std::vector<float> p0(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    p0[i] = 0.001f * static_cast<float>(i % 1013) - 0.5f;
    g[i] = kGradients[1][i % kGradients[1].size()];
  }
  const dl::UpdateTermRanges terms = dl::testing::mixed_update_terms(n, 7);
  UpdaterHyper h = hyper(type, 0.05f);
  h.momentum = 0.8f;
  h.step = 2;
  const dl::testing::BlasThreads blas(threads);
  const std::vector<float> state0 =
      state_for(type, n, type == UpdaterType::kRmsProp ? h.epsilon : 0.5f);

  // The passes the optimizer used to make: L2 into the gradient, decay, then the rule.
  std::vector<float> want_p = p0, want_state = state0, g_l2 = g;
  for (const dl::UpdateTerms& t : terms) {
    const std::size_t count = t.end - t.begin;
    if (t.adds_l2()) dl::cpu::axpy(count, t.l2, p0.data() + t.begin, g_l2.data() + t.begin);
    if (t.decays()) dl::cpu::scale(count, t.decay_keep, want_p.data() + t.begin);
  }
  dl::cpu::updater_step(h, n, want_p.data(), g_l2.data(), want_state.data());

  std::vector<float> p = p0, state = state0;
  const std::vector<float> g_before = g;
  dl::cpu::updater_step(h, n, p.data(), g.data(), state.data(), terms);
  CHECK(p == want_p);
  CHECK(state == want_state);
  CHECK(g == g_before);  // the gradient is read, not changed
  // The terms did something: each range's first parameter moved otherwise than without terms
  // (for every kind of range; the fixture's L2 alone is too small to show through RmsProp's
  // normalization, its fourth range's is not), and one under no term did not.
  std::vector<float> plain = p0, plain_state = state0;
  dl::cpu::updater_step(h, n, plain.data(), g.data(), plain_state.data());
  for (std::size_t r = 1; r < 4; ++r) CHECK(plain[terms[r].begin] != p[terms[r].begin]);
  CHECK(plain[terms.front().begin - 1] == p[terms.front().begin - 1]);
}

TEST_CASE("updater term ranges out of order or past the buffer are refused", "[updater]") {
  std::vector<float> p(64, 1.0f), g(64, 0.5f);
  const UpdaterHyper h = hyper(UpdaterType::kSgd, 0.1f);
  dl::UpdateTerms a, b;
  a.begin = 10, a.end = 20, a.l2 = 0.1f;
  b.begin = 15, b.end = 30, b.l2 = 0.1f;
  CHECK_THROWS(dl::cpu::updater_step(h, p.size(), p.data(), g.data(), nullptr, {a, b}));
  b.begin = 40, b.end = 65;
  CHECK_THROWS(dl::cpu::updater_step(h, p.size(), p.data(), g.data(), nullptr, {a, b}));
  CHECK(p == std::vector<float>(64, 1.0f));
}
