#include "backend/cpu/activation.hpp"

#include <algorithm>
#include <cmath>

#include "backend/cpu/thread_pool.hpp"
#include "backend/ops/activation.hpp"
#include "core/error.hpp"

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
  const bool elementwise = ops::visit_elementwise_activation(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    // Elementwise, so any split over threads gives the same bits.
    parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) y[i] = ops::activate<kA>(x[i]);
    });
  });
  if (elementwise) return;
  if (a == Activation::kSoftmax) {
    if (cols == 0) return;
    for (std::size_t r = 0; r < rows; ++r) softmax_row(cols, x + r * cols, y + r * cols);
    return;
  }
  if (x != y) std::copy(x, x + n, y);  // the identity
}

void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                         const float* y, const float* dy, float* dx) {
  const std::size_t n = rows * cols;
  const bool elementwise = ops::visit_elementwise_activation(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
      if constexpr (ops::activation_reads_input(kA)) {
        for (std::size_t i = begin; i < end; ++i)
          dx[i] = ops::activation_gradient<kA>(x[i], y[i], dy[i]);
      } else {
        // x unread (it may be null): the gradient is a function of y.
        for (std::size_t i = begin; i < end; ++i)
          dx[i] = ops::activation_gradient<kA>(0.0f, y[i], dy[i]);
      }
    });
  });
  if (elementwise) return;
  if (a == Activation::kSoftmax) {
    for (std::size_t r = 0; r < rows; ++r)
      softmax_backward_row(cols, y + r * cols, dy + r * cols, dx + r * cols);
    return;
  }
  if (dy != dx) std::copy(dy, dy + n, dx);  // the identity
}

void add_activation_forward(Activation a, std::size_t n, const float* x, float* y) {
  ops::check_residual_activation(a);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    // Elementwise, as axpy and the activation are: any split over threads gives the same bits.
    parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
      const float* __restrict src = x;
      float* __restrict dst = y;
      for (std::size_t i = begin; i < end; ++i) dst[i] = ops::activate<kA>(dst[i] + src[i]);
    });
  });
}

void add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                             const float* term, float* dy) {
  ops::check_residual_activation(a);
  ops::check_gradient_input(a, x);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    constexpr Activation kA = decltype(tag)::value;
    parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const float input = ops::activation_reads_input(kA) ? x[i] : 0.0f;
        dy[i] = ops::activation_gradient<kA>(input, y[i], dy[i] + term[i]);
      }
    });
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
