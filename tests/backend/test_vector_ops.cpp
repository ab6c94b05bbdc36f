// Flat-buffer arithmetic: scale, axpy and sum_of_squares against plain loops, sum_of_squares'
// double accumulation and its sum over threads, and all_finite on every kind of non-finite value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/thread_pool.hpp"
#include "backend/cpu/vector_ops.hpp"
#include "backend/op_test_support.hpp"
#include "core/random.hpp"

namespace {

constexpr std::uint64_t kSeed = 5;
// Odd, so any vectorized main loop also leaves a remainder.
constexpr std::size_t kCount = 1037;
// Long enough to be split over threads, and odd.
constexpr std::size_t kSlicedCount = 3 * dl::cpu::kMinSlicedElements + 7;

std::vector<float> random_values(std::size_t n, std::uint64_t stream) {
  dl::RandomStream rng(kSeed, stream);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

}  // namespace

TEST_CASE("scale multiplies every element", "[vector_ops]") {
  const std::vector<float> x = random_values(kCount, 1);
  std::vector<float> y = x;
  dl::cpu::scale(y.size(), -0.375f, y.data());
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == x[i] * -0.375f);
}

TEST_CASE("axpy adds a scaled vector", "[vector_ops]") {
  const std::vector<float> x = random_values(kCount, 2);
  const std::vector<float> y0 = random_values(kCount, 3);
  std::vector<float> y = y0;
  dl::cpu::axpy(y.size(), 2.5f, x.data(), y.data());
  for (std::size_t i = 0; i < x.size(); ++i)
    REQUIRE(y[i] == Approx(static_cast<double>(y0[i]) + 2.5 * x[i]).margin(1e-6));
}

TEST_CASE("scale and axpy over a long buffer: every element, the same bits on 1 and 2 threads",
          "[vector_ops]") {
  const std::vector<float> x = random_values(kSlicedCount, 4);
  const std::vector<float> y0 = random_values(kSlicedCount, 5);
  const auto run = [&](int threads) {
    const dl::testing::BlasThreads blas(threads);
    std::vector<float> y = y0;
    dl::cpu::axpy(y.size(), 2.5f, x.data(), y.data());
    dl::cpu::scale(y.size(), -0.375f, y.data());
    return y;
  };
  const std::vector<float> one = run(1), two = run(2);
  CHECK(one == two);
  for (std::size_t i = 0; i < x.size(); ++i)
    REQUIRE(two[i] == Approx(-0.375 * (static_cast<double>(y0[i]) + 2.5 * x[i])).margin(1e-6));
}

TEST_CASE("sum_of_squares matches a double-precision sum", "[vector_ops]") {
  const std::vector<float> x = random_values(kCount, 4);
  double expected = 0;
  for (float v : x) expected += static_cast<double>(v) * v;
  float result = -1.0f;
  dl::cpu::sum_of_squares(x.size(), x.data(), &result);
  CHECK(result == Approx(expected).epsilon(1e-6));

  dl::cpu::sum_of_squares(0, x.data(), &result);
  CHECK(result == 0.0f);
}

TEST_CASE(
    "sum_of_squares over a long buffer: a double-precision sum, the same bits on 1, 2 and 3 "
    "threads",
    "[vector_ops]") {
  // Offset by a large value, so that a float accumulator or a dropped range would show; 64
  // ranges, so that the helper threads wake in time to take some.
  std::vector<float> x = random_values(64 * dl::cpu::kRangeFloats + 7, 6);
  for (float& v : x) v += 3.0f;
  double expected = 0;
  for (float v : x) expected += static_cast<double>(v) * v;
  const auto run = [&](int threads) {
    const dl::testing::BlasThreads blas(threads);
    float result = -1.0f;
    dl::cpu::sum_of_squares(x.size(), x.data(), &result);
    return result;
  };
  const float one = run(1);
  CHECK(one == Approx(expected).epsilon(1e-7));
  CHECK(run(2) == one);
  CHECK(run(3) == one);
}

TEST_CASE("sum_of_squares accumulates in double", "[vector_ops]") {
  // 4096^2 = 2^24, where float's spacing is 2: a float accumulator would drop every +1.
  constexpr std::size_t kOnes = 1000;
  std::vector<float> x(kOnes + 1, 1.0f);
  x[0] = 4096.0f;
  float result = 0.0f;
  dl::cpu::sum_of_squares(x.size(), x.data(), &result);
  CHECK(result == 16777216.0f + kOnes);
}

TEST_CASE("all_finite detects NaN and infinities anywhere", "[vector_ops]") {
  std::vector<float> x = random_values(kCount, 5);
  x[1] = std::numeric_limits<float>::max();
  x[2] = -std::numeric_limits<float>::max();
  x[3] = std::numeric_limits<float>::denorm_min();
  x[4] = -0.0f;
  CHECK(dl::cpu::all_finite(x.size(), x.data()));
  CHECK(dl::cpu::all_finite(0, x.data()));

  const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity()};
  for (float bad : bad_values)
    for (std::size_t at : {std::size_t{0}, kCount / 2, kCount - 1}) {
      INFO("value " << bad << " at " << at);
      std::vector<float> y = x;
      y[at] = bad;
      CHECK_FALSE(dl::cpu::all_finite(y.size(), y.data()));
      // Only the first `at` values are looked at when n stops before the bad one.
      CHECK(dl::cpu::all_finite(at, y.data()));
    }
}

TEST_CASE("all_finite over a long buffer finds a bad value in any range, on 1 to 16 threads",
          "[vector_ops]") {
  std::vector<float> x = random_values(kSlicedCount, 6);
  const int threads = GENERATE(1, 2, 3, 16);
  INFO(threads << " threads");
  const dl::testing::BlasThreads blas(threads);
  CHECK(dl::cpu::all_finite(x.size(), x.data()));
  // The first and last value, and values on both sides of where a range of any of these thread
  // counts ends.
  for (std::size_t at : {std::size_t{0}, dl::cpu::kLeastElementwiseFloats - 1,
                         dl::cpu::kRangeFloats, kSlicedCount / 2, kSlicedCount - 1}) {
    INFO("NaN at " << at);
    const float kept = x[at];
    x[at] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(dl::cpu::all_finite(x.size(), x.data()));
    x[at] = kept;
  }
}
