#include "backend/cpu/activation.hpp"

#include <algorithm>
#include <cmath>

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Softmax of one row; safe when x == y because each x value is read before y is written.
void softmax_row(std::size_t cols, const float* x, float* y) {
  float row_max = x[0];
  for (std::size_t j = 1; j < cols; ++j) row_max = std::max(row_max, x[j]);
  double sum = 0.0;
  for (std::size_t j = 0; j < cols; ++j) {
    y[j] = std::exp(x[j] - row_max);
    sum += y[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (std::size_t j = 0; j < cols; ++j) y[j] *= inv_sum;
}

// dx = y * (dy - <dy, y>) for one row; the dot product is complete before dx is written, so
// dx == dy is safe.
void softmax_backward_row(std::size_t cols, const float* y, const float* dy, float* dx) {
  double dot = 0.0;
  for (std::size_t j = 0; j < cols; ++j) dot += static_cast<double>(dy[j]) * y[j];
  const float dot_f = static_cast<float>(dot);
  for (std::size_t j = 0; j < cols; ++j) dx[j] = y[j] * (dy[j] - dot_f);
}

}  // namespace

void activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                        float* y) {
  const std::size_t n = rows * cols;
  switch (a) {
    case Activation::kIdentity:
      if (x != y) std::copy(x, x + n, y);
      return;
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::kLeakyRelu:
      for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : kDefaultLeakyReluAlpha * x[i];
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case Activation::kSigmoid:
      // exp(-x) overflows to inf for very negative x, giving exactly 0: no NaN on either side.
      for (std::size_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      return;
    case Activation::kSoftmax:
      if (cols == 0) return;
      for (std::size_t r = 0; r < rows; ++r) softmax_row(cols, x + r * cols, y + r * cols);
      return;
  }
}

void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* y,
                         const float* dy, float* dx) {
  const std::size_t n = rows * cols;
  switch (a) {
    case Activation::kIdentity:
      if (dy != dx) std::copy(dy, dy + n, dx);
      return;
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      return;
    case Activation::kLeakyRelu:
      for (std::size_t i = 0; i < n; ++i)
        dx[i] = y[i] > 0.0f ? dy[i] : kDefaultLeakyReluAlpha * dy[i];
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      return;
    case Activation::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      return;
    case Activation::kSoftmax:
      for (std::size_t r = 0; r < rows; ++r)
        softmax_backward_row(cols, y + r * cols, dy + r * cols, dx + r * cols);
      return;
  }
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
