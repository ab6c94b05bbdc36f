// Finite-difference gradient checking for the backend ops' tests (Caffe's GradientChecker idea).
// The caller provides a scalar function of a parameter vector; the checker perturbs each entry by
// +-step in double-checked central differences and compares with the analytic gradient.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace dl::testing {

struct GradientCheckOptions {
  double step = 1e-2;  // float32 ops: a larger step keeps rounding noise small
  double relative_tolerance = 2e-2;
  double absolute_tolerance = 1e-3;
};

// loss(values) must be a pure function of `values`. analytic[i] is d loss / d values[i].
inline void check_gradient(const std::string& what, std::vector<float>& values,
                           const std::vector<float>& analytic,
                           const std::function<double(const std::vector<float>&)>& loss,
                           GradientCheckOptions opt = {}) {
  REQUIRE(values.size() == analytic.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = static_cast<float>(saved + opt.step);
    const double plus = loss(values);
    values[i] = static_cast<float>(saved - opt.step);
    const double minus = loss(values);
    values[i] = saved;
    const double numeric = (plus - minus) / (2.0 * opt.step);
    const double scale = std::max(std::fabs(numeric), std::fabs(static_cast<double>(analytic[i])));
    const double err = std::fabs(numeric - analytic[i]);
    INFO(what << " index " << i << ": numeric " << numeric << " analytic " << analytic[i]);
    CHECK(err <= opt.absolute_tolerance + opt.relative_tolerance * scale);
  }
}

}  // namespace dl::testing
