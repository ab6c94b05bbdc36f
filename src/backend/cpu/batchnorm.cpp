#include "backend/cpu/batchnorm.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

struct Layout {
  std::size_t n, channels, spatial;
  // Offset of the first value of (sample i, channel c); its `spatial` values follow contiguously.
  std::size_t offset(std::size_t i, std::size_t c) const { return (i * channels + c) * spatial; }
  std::size_t per_channel() const { return n * spatial; }
};

Layout layout_of(const BatchNormShape& s) {
  DL_CHECK(s.n > 0 && s.channels > 0 && s.spatial > 0,
           "batch norm shape must be positive, got n=" + std::to_string(s.n) +
               " channels=" + std::to_string(s.channels) + " spatial=" + std::to_string(s.spatial));
  return Layout{static_cast<std::size_t>(s.n), static_cast<std::size_t>(s.channels),
                static_cast<std::size_t>(s.spatial)};
}

// y = x * scale + shift over the values of channel c.
void apply_affine(const Layout& l, std::size_t c, const float* x, float scale, float shift,
                  float* y) {
  for (std::size_t i = 0; i < l.n; ++i) {
    const float* xs = x + l.offset(i, c);
    float* ys = y + l.offset(i, c);
    for (std::size_t k = 0; k < l.spatial; ++k) ys[k] = xs[k] * scale + shift;
  }
}

}  // namespace

void batchnorm_forward_training(const BatchNormShape& s, float eps, float decay, const float* x,
                                const float* gamma, const float* beta, float* y,
                                float* running_mean, float* running_var, float* save_mean,
                                float* save_inv_std) {
  const Layout l = layout_of(s);
  const double m = static_cast<double>(l.per_channel());
  const double unbias = l.per_channel() > 1 ? m / (m - 1.0) : 1.0;
  for (std::size_t c = 0; c < l.channels; ++c) {
    double sum = 0.0;
    for (std::size_t i = 0; i < l.n; ++i) {
      const float* xs = x + l.offset(i, c);
      for (std::size_t k = 0; k < l.spatial; ++k) sum += xs[k];
    }
    const double mean = sum / m;
    // Second pass on centered values: no cancellation when |mean| >> std.
    double squared = 0.0;
    for (std::size_t i = 0; i < l.n; ++i) {
      const float* xs = x + l.offset(i, c);
      for (std::size_t k = 0; k < l.spatial; ++k) {
        const double d = xs[k] - mean;
        squared += d * d;
      }
    }
    const double var = squared / m;
    const double inv_std = 1.0 / std::sqrt(var + eps);
    const float scale = static_cast<float>(gamma[c] * inv_std);
    const float shift = static_cast<float>(beta[c] - mean * gamma[c] * inv_std);
    apply_affine(l, c, x, scale, shift, y);

    save_mean[c] = static_cast<float>(mean);
    save_inv_std[c] = static_cast<float>(inv_std);
    running_mean[c] = static_cast<float>(decay * running_mean[c] + (1.0 - decay) * mean);
    running_var[c] = static_cast<float>(decay * running_var[c] + (1.0 - decay) * var * unbias);
  }
}

void batchnorm_forward_inference(const BatchNormShape& s, float eps, const float* x,
                                 const float* gamma, const float* beta, const float* running_mean,
                                 const float* running_var, float* y) {
  const Layout l = layout_of(s);
  for (std::size_t c = 0; c < l.channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
    const float scale = static_cast<float>(gamma[c] * inv_std);
    const float shift = static_cast<float>(beta[c] - running_mean[c] * gamma[c] * inv_std);
    apply_affine(l, c, x, scale, shift, y);
  }
}

void batchnorm_backward(const BatchNormShape& s, const float* x, const float* dy,
                        const float* gamma, const float* save_mean, const float* save_inv_std,
                        float* dx, float* dgamma, float* dbeta) {
  const Layout l = layout_of(s);
  const double m = static_cast<double>(l.per_channel());
  for (std::size_t c = 0; c < l.channels; ++c) {
    const float mean = save_mean[c];
    const float inv_std = save_inv_std[c];
    double sum_dy = 0.0;
    double sum_dy_xhat = 0.0;
    for (std::size_t i = 0; i < l.n; ++i) {
      const float* xs = x + l.offset(i, c);
      const float* dys = dy + l.offset(i, c);
      for (std::size_t k = 0; k < l.spatial; ++k) {
        sum_dy += dys[k];
        sum_dy_xhat += static_cast<double>(dys[k]) * ((xs[k] - mean) * inv_std);
      }
    }
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    // The header's dx formula with 1/m moved inside: gamma inv_std (dy - mean dy - xhat mean(dy
    // xhat)).
    const float a = gamma[c] * inv_std;
    const float mean_dy = static_cast<float>(sum_dy / m);
    const float mean_dy_xhat = static_cast<float>(sum_dy_xhat / m);
    for (std::size_t i = 0; i < l.n; ++i) {
      const float* xs = x + l.offset(i, c);
      const float* dys = dy + l.offset(i, c);
      float* dxs = dx + l.offset(i, c);
      for (std::size_t k = 0; k < l.spatial; ++k) {
        const float xhat = (xs[k] - mean) * inv_std;
        dxs[k] = a * (dys[k] - mean_dy - xhat * mean_dy_xhat);
      }
    }
  }
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
