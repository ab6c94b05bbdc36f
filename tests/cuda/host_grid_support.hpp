// Shared by the tests of the kernels on the host grid: the launch limits every kernel runs
// under, random inputs, and comparisons with the CPU backend's results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "launch_limits.hpp"

namespace dl::testing {

// maximumGridSize x maximumBlockSize: one block of one thread (reduction kernels round it up to
// one warp), odd sizes that leave partial blocks and partial warps, the default, and the largest
// block CUDA allows.
inline const std::vector<gpu::LaunchLimits>& host_grid_limits() {
  static const std::vector<gpu::LaunchLimits> limits = {
      {1, 1}, {2, 33}, {3, 100}, {4096, 256}, {7, 1024}};
  return limits;
}

inline std::string describe(const gpu::LaunchLimits& l) {
  return "maximumGridSize " + std::to_string(l.max_grid) + ", maximumBlockSize " +
         std::to_string(l.max_block);
}

// The op tests' uniform draws (backend_op_test_support.hpp), over a wider default range.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -2.0f,
                                        float hi = 2.0f) {
  return uniform(n, seed, lo, hi);
}

// Bit-for-bit equality (NaN equal to the same NaN), naming the first difference.
template <typename T>
void check_same_bits(const std::string& what, const std::vector<T>& got,
                     const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      INFO(what << ": first difference at " << i << ": got " << got[i] << ", want " << want[i]);
      CHECK(false);
      return;
    }
  }
  SUCCEED(what);
}

// Within `tolerance` relative to 1 + |want|, naming the worst element.
inline void check_near(const std::string& what, const std::vector<float>& got,
                       const std::vector<float>& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]) / (1.0 + std::fabs(double(want[i])));
    if (!(err <= worst)) {
      worst = std::isnan(err) ? INFINITY : err;
      at = i;
    }
  }
  INFO(what << ": worst relative error " << worst << " at " << at);
  CHECK(worst <= tolerance);
}

}  // namespace dl::testing
