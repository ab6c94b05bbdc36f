// Every activation written straight from its definition, in double, for the tests of every
// backend: the value, and the derivative with respect to the input x (not y). The list of
// activations is the config's spelling table, so a new activation is tested without being
// listed here twice.
#pragma once

#include <cmath>
#include <vector>

#include "config/enum_names.hpp"
#include "core/kinds.hpp"

namespace dl::testing {

inline std::vector<Activation> all_activations() {
  std::vector<Activation> all;
  for (const auto& spelling : enum_spellings<Activation>()) all.push_back(spelling.value);
  return all;
}

constexpr double kPi = 3.14159265358979323846;
// SELU's constants as Klambauer et al. 2017 give them, in double.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

// Elementwise activations (softmax, which works per row, is the tests' own).
inline double reference_activate(Activation a, double x) {
  switch (a) {
    case Activation::kIdentity: return x;
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kLeakyRelu: return x > 0 ? x : kDefaultLeakyReluAlpha * x;
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSigmoid: return 1 / (1 + std::exp(-x));
    case Activation::kGelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kSilu: return x / (1 + std::exp(-x));
    case Activation::kElu: return x > 0 ? x : std::exp(x) - 1;
    case Activation::kHardswish: return x * std::fmin(std::fmax(x + 3, 0.0), 6.0) / 6;
    case Activation::kMish: return x * std::tanh(std::log1p(std::exp(x)));
    case Activation::kSelu: return kSeluScale * (x > 0 ? x : kSeluAlpha * (std::exp(x) - 1));
    case Activation::kSoftmax: break;
  }
  return NAN;
}

inline double reference_derivative(Activation a, double x) {
  switch (a) {
    case Activation::kIdentity: return 1;
    case Activation::kRelu: return x > 0 ? 1 : 0;
    case Activation::kLeakyRelu: return x > 0 ? 1 : kDefaultLeakyReluAlpha;
    case Activation::kTanh: return 1 / (std::cosh(x) * std::cosh(x));
    case Activation::kSigmoid: {
      const double e = std::exp(-x);
      return e / ((1 + e) * (1 + e));
    }
    case Activation::kGelu:
      return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
             x * std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
    case Activation::kSilu: {
      const double s = 1 / (1 + std::exp(-x));
      return s * (1 + x * (1 - s));
    }
    case Activation::kElu: return x > 0 ? 1 : std::exp(x);
    case Activation::kHardswish: return x < -3 ? 0 : x > 3 ? 1 : (2 * x + 3) / 6;
    case Activation::kMish: {
      const double t = std::tanh(std::log1p(std::exp(x)));
      return t + x * (1 - t * t) / (1 + std::exp(-x));
    }
    case Activation::kSelu: return kSeluScale * (x > 0 ? 1 : kSeluAlpha * std::exp(x));
    case Activation::kSoftmax: break;
  }
  return NAN;
}

}  // namespace dl::testing
