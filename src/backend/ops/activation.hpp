// The activations' contract, shared by both backends (see README.md in this folder): each
// elementwise activation's value y = f(x) and its gradient dL/dx = f'(x) dL/dy, written once for
// the CPU's loops, the CUDA kernels and the host grid that runs those kernels in CI.
//
// The gradient takes the forward input x and output y: tanh and sigmoid read y (cheaper, and the
// bits the CPU always had), GELU, SiLU, ELU, hardswish and mish read x (their derivative is no
// function of y alone). A layer keeps its pre-activation for the backward pass exactly when
// activation_reads_input() says so; otherwise x may be null.
//
//   identity  x                                   1
//   relu      max(x, 0)                           y > 0
//   leakyrelu x > 0 ? x : a x  (a = 0.01)          y > 0 ? 1 : a (a > 0 keeps the sign of x)
//   tanh      tanh x                              1 - y^2
//   sigmoid   1 / (1 + e^-x)                      y (1 - y)
//   gelu      x/2 (1 + erf(x / sqrt 2))           Phi(x) + x phi(x)  (the erf form)
//   silu      x sigmoid(x)  (swish)               s + x s (1 - s), s = sigmoid(x)
//   elu       x > 0 ? x : e^x - 1                 x > 0 ? 1 : e^x
//   hardswish x min(max(x + 3, 0), 6) / 6         x < -3: 0, x > 3: 1, else (2x + 3) / 6
//   mish      x tanh(softplus(x))                 t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x))
//   selu      l (x > 0 ? x : a (e^x - 1))         y > 0 ? l : y + l a  (Klambauer et al. 2017)
//
// Softmax is not elementwise: it works per row (dx = y (dy - <dy, y>)), in each backend's own
// row kernel, and reads y.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/error.hpp"
#include "core/kinds.hpp"

namespace dl::ops {

// ELU's alpha (DL4J's and PyTorch's default).
inline constexpr float kEluAlpha = 1.0f;
// hardswish's knees and scale: relu6(x + 3) / 6.
inline constexpr float kHardswishKnee = 3.0f;
inline constexpr float kHardswishScale = 1.0f / 6.0f;
// SELU's scale l and alpha a (Klambauer et al. 2017; PyTorch's and Keras's constants), which make
// zero mean and unit variance a fixed point of the layers it follows.
inline constexpr float kSeluScale = 1.0507009873554804934f;
inline constexpr float kSeluAlpha = 1.6732632423543772848f;
inline constexpr float kInverseSqrt2 = 0.70710678118654752f;
inline constexpr float kInverseSqrt2Pi = 0.39894228040143268f;

constexpr bool activation_reads_input(Activation a) {
  return a == Activation::kGelu || a == Activation::kSilu || a == Activation::kElu ||
         a == Activation::kHardswish || a == Activation::kMish;
}

constexpr bool activation_is_elementwise(Activation a) {
  return a != Activation::kSoftmax;
}

// The preconditions of a gradient: the forward input where the gradient reads it (activation
// backward, on every backend); and of the residual sum's activation, fused into the add
// (Backend::add_activation_*), which works elementwise only.
inline void check_gradient_input(Activation a, const float* x) {
  DL_CHECK(x != nullptr || !activation_reads_input(a),
           "this activation's gradient reads its input: pass the pre-activation");
}
inline void check_residual_activation(Activation a) {
  DL_CHECK(activation_is_elementwise(a), "the residual sum's activation must be elementwise");
}

// log(1 + e^x), without overflow: above the threshold e^x alone is x's value in float.
inline constexpr float kSoftplusLinearAbove = 20.0f;
constexpr float softplus(float x) {
  return x > kSoftplusLinearAbove ? x : log1pf(expf(x));
}

// y = f(x). Templates, so each backend's loop or kernel has no switch in its body; the C math
// functions (expf, tanhf, erff) exist on the host and on the device alike.
template <Activation A>
constexpr float activate(float x) {
  if constexpr (A == Activation::kRelu) return x > 0.0f ? x : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return x > 0.0f ? x : kDefaultLeakyReluAlpha * x;
  if constexpr (A == Activation::kTanh) return tanhf(x);
  // exp(-x) overflows to inf for very negative x, giving exactly 0: no NaN on either side.
  if constexpr (A == Activation::kSigmoid) return 1.0f / (1.0f + expf(-x));
  if constexpr (A == Activation::kGelu) return 0.5f * x * (1.0f + erff(x * kInverseSqrt2));
  if constexpr (A == Activation::kSilu) return x / (1.0f + expf(-x));
  if constexpr (A == Activation::kElu) return x > 0.0f ? x : kEluAlpha * (expf(x) - 1.0f);
  if constexpr (A == Activation::kHardswish) {
    const float knee = fminf(fmaxf(x + kHardswishKnee, 0.0f), 2.0f * kHardswishKnee);
    return x * knee * kHardswishScale;
  }
  if constexpr (A == Activation::kMish) return x * tanhf(softplus(x));
  if constexpr (A == Activation::kSelu)
    return x > 0.0f ? kSeluScale * x : kSeluScale * kSeluAlpha * (expf(x) - 1.0f);
  return x;
}

// dL/dx from the forward input x, the output y and dL/dy.
template <Activation A>
constexpr float activation_gradient(float x, float y, float dy) {
  if constexpr (A == Activation::kRelu) return y > 0.0f ? dy : 0.0f;
  if constexpr (A == Activation::kLeakyRelu) return y > 0.0f ? dy : kDefaultLeakyReluAlpha * dy;
  if constexpr (A == Activation::kTanh) return dy * (1.0f - y * y);
  if constexpr (A == Activation::kSigmoid) return dy * y * (1.0f - y);
  if constexpr (A == Activation::kGelu) {
    const float cdf = 0.5f * (1.0f + erff(x * kInverseSqrt2));
    const float pdf = kInverseSqrt2Pi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
  if constexpr (A == Activation::kSilu) {
    const float s = 1.0f / (1.0f + expf(-x));
    return dy * (s + x * s * (1.0f - s));
  }
  if constexpr (A == Activation::kElu) return x > 0.0f ? dy : dy * (y + kEluAlpha);
  if constexpr (A == Activation::kHardswish) {
    if (x < -kHardswishKnee) return 0.0f;
    if (x > kHardswishKnee) return dy;
    return dy * (2.0f * x + kHardswishKnee) * kHardswishScale;
  }
  if constexpr (A == Activation::kMish) {
    const float t = tanhf(softplus(x));
    const float s = 1.0f / (1.0f + expf(-x));  // softplus'(x)
    return dy * (t + x * (1.0f - t * t) * s);
  }
  // y > 0 exactly where x > 0; below, y + l a = l a e^x: no pre-activation to keep.
  if constexpr (A == Activation::kSelu)
    return y > 0.0f ? kSeluScale * dy : dy * (y + kSeluScale * kSeluAlpha);
  return dy;
}

template <Activation A>
using ActivationTag = std::integral_constant<Activation, A>;

// Calls visit(ActivationTag<a>{}) for an elementwise activation other than the identity (which
// each backend copies instead) and returns true; false for the identity and softmax. The one
// list of elementwise activations the backends' dispatch follows.
template <class Visitor>
bool visit_elementwise_activation(Activation a, Visitor&& visit) {
  switch (a) {
    case Activation::kRelu:
      return visit(ActivationTag<Activation::kRelu>{}), true;
    case Activation::kLeakyRelu:
      return visit(ActivationTag<Activation::kLeakyRelu>{}), true;
    case Activation::kTanh:
      return visit(ActivationTag<Activation::kTanh>{}), true;
    case Activation::kSigmoid:
      return visit(ActivationTag<Activation::kSigmoid>{}), true;
    case Activation::kGelu:
      return visit(ActivationTag<Activation::kGelu>{}), true;
    case Activation::kSilu:
      return visit(ActivationTag<Activation::kSilu>{}), true;
    case Activation::kElu:
      return visit(ActivationTag<Activation::kElu>{}), true;
    case Activation::kHardswish:
      return visit(ActivationTag<Activation::kHardswish>{}), true;
    case Activation::kMish:
      return visit(ActivationTag<Activation::kMish>{}), true;
    case Activation::kSelu:
      return visit(ActivationTag<Activation::kSelu>{}), true;
    case Activation::kIdentity:
    case Activation::kSoftmax:
      return false;
  }
  return false;
}

// Calls visit(ActivationTag<a>{}) for an elementwise activation or the identity (the fused ops:
// batch normalization's, the residual sum's); a must not be softmax.
template <class Visitor>
void visit_activation_or_identity(Activation a, Visitor&& visit) {
  if (!visit_elementwise_activation(a, visit)) visit(ActivationTag<Activation::kIdentity>{});
}

}  // namespace dl::ops
