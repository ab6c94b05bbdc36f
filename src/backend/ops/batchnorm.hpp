// Batch normalization's shape and the arithmetic both backends share (see README.md in this
// folder), with the elementwise activation that may follow it in the same op.
#pragma once

#include <string>

#include "backend/ops/activation.hpp"
#include "core/error.hpp"

namespace dl {

// Batch normalization over n samples of `channels` features, each repeated `spatial` times
// (h*w for images, 1 for flat vectors).
struct BatchNormShape {
  int n = 0, channels = 0, spatial = 1;
};

}  // namespace dl

namespace dl::ops {

inline void check_shape(const BatchNormShape& s) {
  DL_CHECK(s.n > 0 && s.channels > 0 && s.spatial > 0,
           "batch norm shape must be positive, got n=" + std::to_string(s.n) +
               " channels=" + std::to_string(s.channels) + " spatial=" + std::to_string(s.spatial));
}

// Batch normalization fused with the activation after it (Model fuses a batchNormalization whose
// only reader is an activation layer): y = act(x * scale + shift). Any elementwise activation
// fuses, since its gradient is a function of its input and output, which the backward pass
// recomputes from x and the forward's per-channel scale and shift (save_affine: channels scales,
// then channels shifts) with the forward's float operations, so the bits are those of the two
// ops run one after the other. kIdentity is batch normalization alone, save_affine optional.
inline void check_fusable(Activation a) {
  DL_CHECK(activation_is_elementwise(a), "batch normalization fuses elementwise activations only");
}
inline void check_activation(Activation a, const float* save_affine) {
  check_fusable(a);
  DL_CHECK(a == Activation::kIdentity || save_affine != nullptr,
           "a fused batch normalization needs its saved scale and shift");
}

// The normalized value, the fused activation's input, in the forward pass and its recomputation
// in the backward pass alike.
constexpr float batchnorm_affine(float x, float scale, float shift) {
  return x * scale + shift;
}

// Whether the fused backward pass gives the bits of batch normalization's backward after the
// activation's: where the activation's gradient ends in a product (tanh, sigmoid, GELU...), the
// compilers (GCC's default for C++, nvcc's) may contract it with the next add or subtract into
// one fused multiply-add, which the two ops, with the gradient stored in between, round twice.
// ReLU's and leaky ReLU's gradients are selections of dy (or a dy inside the selection): exact.
constexpr bool batchnorm_gradient_is_exact(Activation a) {
  return a == Activation::kIdentity || a == Activation::kRelu || a == Activation::kLeakyRelu;
}

// The fused activation's gradient at x, from the recomputed normalized value.
template <Activation A>
constexpr float batchnorm_activation_gradient(float x, float scale, float shift, float dy) {
  const float z = batchnorm_affine(x, scale, shift);
  return activation_gradient<A>(z, activate<A>(z), dy);
}

}  // namespace dl::ops
