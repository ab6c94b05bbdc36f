// Activations: forward and backward against plain double-precision formulas, finite-difference
// checks of every backward, and in-place calls.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/activation_reference.hpp"
#include "backend/cpu/activation.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/op_test_support.hpp"
#include "config/enum_names.hpp"
#include "core/random.hpp"
#include "gradient_check.hpp"

namespace {

using dl::Activation;

constexpr std::size_t kRows = 5;
constexpr std::size_t kCols = 7;
constexpr std::uint64_t kSeed = 1234;
constexpr double kTolerance = 1e-5;
// Inputs this close to relu's kink would make a central difference straddle it.
constexpr float kMinDistanceFromKink = 0.05f;

const std::vector<Activation> kAllActivations = dl::testing::all_activations();

std::string name_of(Activation a) {
  return std::string(dl::enum_name(a));
}

std::vector<float> random_values(std::size_t n, std::uint64_t stream, float lo, float hi) {
  dl::RandomStream rng(kSeed, stream);
  std::vector<float> v(n);
  for (float& x : v) {
    do {
      x = lo + (hi - lo) * rng.uniform();
    } while (std::fabs(x) < kMinDistanceFromKink);
  }
  return v;
}

// The activation written directly from its definition, in double.
std::vector<double> reference_forward(Activation a, std::size_t rows, std::size_t cols,
                                      const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = dl::testing::reference_activate(a, x[i]);
  if (a == Activation::kSoftmax) {
    for (std::size_t r = 0; r < rows; ++r) {
      double total = 0;
      for (std::size_t j = 0; j < cols; ++j)
        total += std::exp(static_cast<double>(x[r * cols + j]));
      for (std::size_t j = 0; j < cols; ++j)
        y[r * cols + j] = std::exp(static_cast<double>(x[r * cols + j])) / total;
    }
  }
  return y;
}

// d(sum_i y_i r_i)/dx from the derivative with respect to x (not y), in double.
std::vector<double> reference_backward(Activation a, std::size_t rows, std::size_t cols,
                                       const std::vector<float>& x, const std::vector<float>& r) {
  const std::vector<double> y = reference_forward(a, rows, cols, x);
  std::vector<double> dx(x.size());
  if (a == Activation::kSoftmax) {
    // Full Jacobian: dy_j/dx_i = y_j (delta_ij - y_i).
    for (std::size_t row = 0; row < rows; ++row)
      for (std::size_t i = 0; i < cols; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < cols; ++j) {
          const double delta = i == j ? 1.0 : 0.0;
          s += r[row * cols + j] * y[row * cols + j] * (delta - y[row * cols + i]);
        }
        dx[row * cols + i] = s;
      }
    return dx;
  }
  for (std::size_t i = 0; i < x.size(); ++i)
    dx[i] = dl::testing::reference_derivative(a, x[i]) * r[i];
  return dx;
}

}  // namespace

TEST_CASE("activation forward matches the definitions", "[activation]") {
  const std::vector<float> x = random_values(kRows * kCols, 1, -4.0f, 4.0f);
  for (Activation a : kAllActivations) {
    INFO(name_of(a));
    std::vector<float> y(x.size());
    dl::cpu::activation_forward(a, kRows, kCols, x.data(), y.data());
    const std::vector<double> expected = reference_forward(a, kRows, kCols, x);
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("index " << i);
      CHECK(y[i] == Approx(expected[i]).margin(kTolerance).epsilon(kTolerance));
    }
  }
}

TEST_CASE("softmax rows sum to one and survive huge logits", "[activation]") {
  const std::vector<float> x = {1000.0f, 999.0f, -1000.0f, -1000.0f, -1001.0f, -1002.0f};
  std::vector<float> y(x.size());
  dl::cpu::activation_forward(Activation::kSoftmax, 2, 3, x.data(), y.data());
  for (std::size_t r = 0; r < 2; ++r) {
    double row_sum = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      REQUIRE(std::isfinite(y[r * 3 + j]));
      row_sum += y[r * 3 + j];
    }
    CHECK(row_sum == Approx(1.0).epsilon(kTolerance));
  }
  // exp(0) : exp(-1) : exp(-2000) for the first row.
  CHECK(y[0] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(kTolerance));
  CHECK(y[2] == 0.0f);
  // The second row is the shifted 0, -1, -2 pattern.
  const double z = 1.0 + std::exp(-1.0) + std::exp(-2.0);
  CHECK(y[3] == Approx(1.0 / z).epsilon(kTolerance));
  CHECK(y[5] == Approx(std::exp(-2.0) / z).epsilon(kTolerance));
}

TEST_CASE("sigmoid saturates without NaN", "[activation]") {
  const std::vector<float> x = {-200.0f, 200.0f, -20.0f, 90.0f};
  std::vector<float> y(x.size());
  dl::cpu::activation_forward(Activation::kSigmoid, 1, x.size(), x.data(), y.data());
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == 1.0f);
  CHECK(y[2] == Approx(1.0 / (1.0 + std::exp(20.0))).epsilon(kTolerance));
  CHECK(y[3] == 1.0f);
}

TEST_CASE("activation backward matches the derivative with respect to x", "[activation]") {
  const std::vector<float> x = random_values(kRows * kCols, 2, -3.0f, 3.0f);
  const std::vector<float> r = random_values(kRows * kCols, 3, -1.0f, 1.0f);
  for (Activation a : kAllActivations) {
    INFO(name_of(a));
    std::vector<float> y(x.size()), dx(x.size());
    dl::cpu::activation_forward(a, kRows, kCols, x.data(), y.data());
    dl::cpu::activation_backward(a, kRows, kCols, x.data(), y.data(), r.data(), dx.data());
    const std::vector<double> expected = reference_backward(a, kRows, kCols, x, r);
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO("index " << i);
      CHECK(dx[i] == Approx(expected[i]).margin(kTolerance).epsilon(1e-4));
    }
  }
}

TEST_CASE("activation backward passes a finite-difference check", "[activation][gradient]") {
  std::vector<float> x = random_values(kRows * kCols, 4, -2.0f, 2.0f);
  const std::vector<float> r = random_values(kRows * kCols, 5, -1.0f, 1.0f);
  for (Activation a : kAllActivations) {
    std::vector<float> y(x.size()), dx(x.size());
    dl::cpu::activation_forward(a, kRows, kCols, x.data(), y.data());
    dl::cpu::activation_backward(a, kRows, kCols, x.data(), y.data(), r.data(), dx.data());
    const auto loss = [&](const std::vector<float>& in) {
      std::vector<float> out(in.size());
      dl::cpu::activation_forward(a, kRows, kCols, in.data(), out.data());
      double s = 0;
      for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * r[i];
      return s;
    };
    dl::testing::check_gradient(name_of(a), x, dx, loss);
  }
}

TEST_CASE("activations work in place", "[activation]") {
  const std::vector<float> x = random_values(kRows * kCols, 6, -3.0f, 3.0f);
  const std::vector<float> dy = random_values(kRows * kCols, 7, -1.0f, 1.0f);
  for (Activation a : kAllActivations) {
    INFO(name_of(a));
    std::vector<float> y(x.size()), dx(x.size());
    dl::cpu::activation_forward(a, kRows, kCols, x.data(), y.data());
    dl::cpu::activation_backward(a, kRows, kCols, x.data(), y.data(), dy.data(), dx.data());

    std::vector<float> buffer = x;
    dl::cpu::activation_forward(a, kRows, kCols, buffer.data(), buffer.data());
    CHECK(buffer == y);
    std::vector<float> grad = dy;
    dl::cpu::activation_backward(a, kRows, kCols, x.data(), y.data(), grad.data(), grad.data());
    CHECK(grad == dx);
  }
}

// The passes are cut into ranges by the thread count (parallel_elementwise): every element must
// still get the same bits, wherever its range ends (and whether it falls in a vector loop's body
// or its tail there).
TEST_CASE("activations and the residual sum's pass give the same bits on 1, 2, 3 and 16 threads",
          "[activation][thread_pool]") {
  constexpr std::size_t kLong = 3 * dl::cpu::kRangeFloats + 13;
  const std::vector<float> x = random_values(kLong, 8, -4.0f, 4.0f);
  const std::vector<float> dy = random_values(kLong, 9, -1.0f, 1.0f);
  const std::vector<float> term = random_values(kLong, 10, -1.0f, 1.0f);
  for (Activation a : kAllActivations) {
    if (!dl::ops::activation_is_elementwise(a)) continue;
    INFO(name_of(a));
    const auto run = [&](int threads) {
      const dl::testing::BlasThreads blas(threads);
      std::vector<std::vector<float>> out(4, std::vector<float>(kLong));
      dl::cpu::activation_forward(a, 1, kLong, x.data(), out[0].data());
      dl::cpu::activation_backward(a, 1, kLong, x.data(), out[0].data(), dy.data(), out[1].data());
      out[2] = x;
      dl::cpu::add_activation_forward(a, kLong, term.data(), out[2].data());
      out[3] = dy;
      dl::cpu::add_activation_backward(a, kLong, x.data(), out[0].data(), term.data(),
                                       out[3].data());
      return out;
    };
    const auto one = run(1);
    for (int threads : {2, 3, 16}) {
      INFO(threads << " threads");
      const auto other = run(threads);
      CHECK(other[0] == one[0]);
      CHECK(other[1] == one[1]);
      CHECK(other[2] == one[2]);
      CHECK(other[3] == one[3]);
    }
  }
}
