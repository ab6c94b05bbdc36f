// The CPU dense layer against naive matrix products, and against finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/dense.hpp"
#include "backend/gradient_check.hpp"
#include "backend/op_test_support.hpp"

namespace {

using dl::testing::BlasThreads;
using dl::testing::check_close;
using dl::testing::Guarded;

constexpr double kTolerance = 1e-4;
constexpr unsigned kSeed = 99173;

struct Dims {
  int n, in, out;
};

std::string describe(const Dims& d) {
  return "n " + std::to_string(d.n) + " in " + std::to_string(d.in) + " out " +
         std::to_string(d.out);
}

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = dist(rng);
  return v;
}

struct Problem {
  Dims d;
  std::vector<float> x, w, b, dy;
};

Problem random_problem(const Dims& d, std::mt19937& rng) {
  return {d, random_values(static_cast<std::size_t>(d.n) * d.in, rng),
          random_values(static_cast<std::size_t>(d.in) * d.out, rng), random_values(d.out, rng),
          random_values(static_cast<std::size_t>(d.n) * d.out, rng)};
}

struct Reference {
  std::vector<double> y, dx, dw, db;
};

// y = x w + b, dx = dy w^T, dw = x^T dy, db = column sums of dy, each as a plain triple loop.
Reference reference(const Problem& p) {
  const auto [n, in, out] = p.d;
  Reference r{std::vector<double>(static_cast<std::size_t>(n) * out),
              std::vector<double>(static_cast<std::size_t>(n) * in),
              std::vector<double>(static_cast<std::size_t>(in) * out), std::vector<double>(out)};
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < out; ++o) {
      double sum = p.b[o];
      for (int k = 0; k < in; ++k) sum += static_cast<double>(p.x[i * in + k]) * p.w[k * out + o];
      r.y[i * out + o] = sum;
    }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < in; ++k) {
      double sum = 0.0;
      for (int o = 0; o < out; ++o)
        sum += static_cast<double>(p.dy[i * out + o]) * p.w[k * out + o];
      r.dx[i * in + k] = sum;
    }
  for (int k = 0; k < in; ++k)
    for (int o = 0; o < out; ++o) {
      double sum = 0.0;
      for (int i = 0; i < n; ++i) sum += static_cast<double>(p.x[i * in + k]) * p.dy[i * out + o];
      r.dw[k * out + o] = sum;
    }
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < n; ++i) r.db[o] += p.dy[i * out + o];
  return r;
}

}  // namespace

TEST_CASE("dense matches naive matrix products, forward and backward", "[dense]") {
  std::mt19937 rng(kSeed);
  // {33, 400, 350} is large enough to be cut into tiles.
  const std::vector<Dims> cases = {{1, 1, 1},    {3, 5, 7},   {4, 800, 500} /* LeNet's hidden */,
                                   {4, 500, 10}, {17, 33, 9}, {33, 400, 350}};
  const int threads = GENERATE(1, 2);
  const BlasThreads blas(threads);
  for (const Dims& d : cases) {
    INFO(describe(d) << ", BLAS threads " << threads);
    const Problem p = random_problem(d, rng);
    Guarded<float> y(p.dy.size()), dx(p.x.size()), dw(p.w.size()), db(d.out);
    dl::cpu::dense_forward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.b.data(), y.get());
    dl::cpu::dense_backward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.dy.data(), dx.get(),
                            dw.get(), db.get());
    const Reference want = reference(p);
    check_close("y", y.get(), want.y, kTolerance);
    check_close("dx", dx.get(), want.dx, kTolerance);
    check_close("dw", dw.get(), want.dw, kTolerance);
    check_close("db", db.get(), want.db, kTolerance);
    CHECK(y.guard_intact());
    CHECK(dx.guard_intact());
    CHECK(dw.guard_intact());
    CHECK(db.guard_intact());
  }
}

TEST_CASE("dense first-layer backward (no dx) gives the same dw and db", "[dense]") {
  std::mt19937 rng(kSeed + 1);
  const Dims d = GENERATE(Dims{6, 40, 30}, Dims{33, 400, 350} /* cut into slices */);
  INFO(describe(d));
  const Problem p = random_problem(d, rng);
  std::vector<float> dx(p.x.size()), dw_full(p.w.size()), db_full(d.out);
  std::vector<float> dw_first(p.w.size()), db_first(d.out);
  dl::cpu::dense_backward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.dy.data(), nullptr,
                          dw_first.data(), db_first.data());
  dl::cpu::dense_backward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.dy.data(), dx.data(),
                          dw_full.data(), db_full.data());
  CHECK(dw_first == dw_full);
  CHECK(db_first == db_full);
}

TEST_CASE("dense gradients match finite differences", "[dense][gradient]") {
  std::mt19937 rng(kSeed + 2);
  const Dims d{3, 6, 4};
  Problem p = random_problem(d, rng);
  const std::vector<float>& r = p.dy;  // loss = sum(y * r), so dloss/dy = r
  std::vector<float> y(r.size());
  const auto loss = [&](const std::vector<float>& x, const std::vector<float>& w,
                        const std::vector<float>& b) {
    dl::cpu::dense_forward(d.n, d.in, d.out, x.data(), w.data(), b.data(), y.data());
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * r[i];
    return sum;
  };
  std::vector<float> dx(p.x.size()), dw(p.w.size()), db(d.out);
  dl::cpu::dense_backward(d.n, d.in, d.out, p.x.data(), p.w.data(), r.data(), dx.data(), dw.data(),
                          db.data());
  dl::testing::check_gradient("dx", p.x, dx,
                              [&](const std::vector<float>& v) { return loss(v, p.w, p.b); });
  dl::testing::check_gradient("dw", p.w, dw,
                              [&](const std::vector<float>& v) { return loss(p.x, v, p.b); });
  dl::testing::check_gradient("db", p.b, db,
                              [&](const std::vector<float>& v) { return loss(p.x, p.w, v); });
}

TEST_CASE("dense gives the same bits on 1, 2, 3, 4, 8 and 16 threads", "[dense]") {
  std::mt19937 rng(kSeed + 3);
  // LeNet's hidden layer at batch 128, and odd sizes whose slices differ in size.
  const Dims d = GENERATE(Dims{128, 800, 500}, Dims{37, 801, 503});
  INFO(describe(d));
  const Problem p = random_problem(d, rng);
  const auto run = [&](int threads) {
    const BlasThreads blas(threads);
    dl::testing::LayerPass r{std::vector<float>(p.dy.size()), std::vector<float>(p.x.size()),
                             std::vector<float>(p.w.size()), std::vector<float>(d.out)};
    dl::cpu::dense_forward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.b.data(), r.y.data());
    dl::cpu::dense_backward(d.n, d.in, d.out, p.x.data(), p.w.data(), p.dy.data(), r.dx.data(),
                            r.dw.data(), r.db.data());
    return r;
  };
  dl::testing::check_same_bits_on_any_thread_count(run);
}
