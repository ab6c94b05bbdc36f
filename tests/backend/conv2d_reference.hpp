// The convolution tests' geometries and references (test_conv2d.cpp): Truncate and Same
// geometries from a shape, sizes, random inputs, and the direct (seven nested loops) convolution
// with its gradients in double.
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace dl::testing::conv {

using dl::Conv2dGeometry;

struct Shape {
  int batch, in_channels, in_height, in_width, out_channels, kernel_height, kernel_width;
  int stride_height = 1, stride_width = 1;
};

// Truncate mode with symmetric padding.
inline Conv2dGeometry truncate_geometry(const Shape& s, int pad_h = 0, int pad_w = 0) {
  Conv2dGeometry g;
  g.batch = s.batch;
  g.in_channels = s.in_channels;
  g.in_height = s.in_height;
  g.in_width = s.in_width;
  g.out_channels = s.out_channels;
  g.kernel_height = s.kernel_height;
  g.kernel_width = s.kernel_width;
  g.stride_height = s.stride_height;
  g.stride_width = s.stride_width;
  g.pad_top = pad_h;
  g.pad_left = pad_w;
  g.out_height = (s.in_height + 2 * pad_h - s.kernel_height) / s.stride_height + 1;
  g.out_width = (s.in_width + 2 * pad_w - s.kernel_width) / s.stride_width + 1;
  return g;
}

// Same mode: out = ceil(in / stride), the total padding split with the smaller half first.
inline Conv2dGeometry same_geometry(const Shape& s) {
  Conv2dGeometry g = truncate_geometry(s);
  g.out_height = (s.in_height + s.stride_height - 1) / s.stride_height;
  g.out_width = (s.in_width + s.stride_width - 1) / s.stride_width;
  const int total_h =
      std::max((g.out_height - 1) * s.stride_height + s.kernel_height - s.in_height, 0);
  const int total_w = std::max((g.out_width - 1) * s.stride_width + s.kernel_width - s.in_width, 0);
  g.pad_top = total_h / 2;
  g.pad_left = total_w / 2;
  return g;
}

inline std::string describe(const Conv2dGeometry& g) {
  return "N" + std::to_string(g.batch) + " C" + std::to_string(g.in_channels) + " " +
         std::to_string(g.in_height) + "x" + std::to_string(g.in_width) + " -> " +
         std::to_string(g.out_channels) + "x" + std::to_string(g.out_height) + "x" +
         std::to_string(g.out_width) + " k" + std::to_string(g.kernel_height) + "x" +
         std::to_string(g.kernel_width) + " s" + std::to_string(g.stride_height) + "x" +
         std::to_string(g.stride_width) + " pad " + std::to_string(g.pad_top) + "," +
         std::to_string(g.pad_left);
}

inline std::size_t x_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels * g.in_height * g.in_width;
}
inline std::size_t y_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}
inline std::size_t w_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height *
         g.kernel_width;
}

inline std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = dist(rng);
  return v;
}

struct Gradients {
  std::vector<double> dx, dw, db;
};

// Direct cross-correlation; inputs outside the image are zero.
inline std::vector<double> reference_forward(const Conv2dGeometry& g, const std::vector<float>& x,
                                             const std::vector<float>& w,
                                             const std::vector<float>& b) {
  std::vector<double> y(y_size(g));
  for (int n = 0; n < g.batch; ++n)
    for (int co = 0; co < g.out_channels; ++co)
      for (int oh = 0; oh < g.out_height; ++oh)
        for (int ow = 0; ow < g.out_width; ++ow) {
          double sum = b[co];
          for (int ci = 0; ci < g.in_channels; ++ci)
            for (int i = 0; i < g.kernel_height; ++i)
              for (int j = 0; j < g.kernel_width; ++j) {
                const int ih = oh * g.stride_height + i - g.pad_top;
                const int iw = ow * g.stride_width + j - g.pad_left;
                if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
                sum += static_cast<double>(
                           x[((n * g.in_channels + ci) * g.in_height + ih) * g.in_width + iw]) *
                       w[((co * g.in_channels + ci) * g.kernel_height + i) * g.kernel_width + j];
              }
          y[((n * g.out_channels + co) * g.out_height + oh) * g.out_width + ow] = sum;
        }
  return y;
}

// Each output's gradient flows back to exactly the inputs and weights the forward sum read.
inline Gradients reference_backward(const Conv2dGeometry& g, const std::vector<float>& x,
                                    const std::vector<float>& w, const std::vector<float>& dy) {
  Gradients r{std::vector<double>(x_size(g)), std::vector<double>(w_size(g)),
              std::vector<double>(g.out_channels)};
  for (int n = 0; n < g.batch; ++n)
    for (int co = 0; co < g.out_channels; ++co)
      for (int oh = 0; oh < g.out_height; ++oh)
        for (int ow = 0; ow < g.out_width; ++ow) {
          const double d = dy[((n * g.out_channels + co) * g.out_height + oh) * g.out_width + ow];
          r.db[co] += d;
          for (int ci = 0; ci < g.in_channels; ++ci)
            for (int i = 0; i < g.kernel_height; ++i)
              for (int j = 0; j < g.kernel_width; ++j) {
                const int ih = oh * g.stride_height + i - g.pad_top;
                const int iw = ow * g.stride_width + j - g.pad_left;
                if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
                const std::size_t xi =
                    ((n * g.in_channels + ci) * g.in_height + ih) * g.in_width + iw;
                const std::size_t wi =
                    ((co * g.in_channels + ci) * g.kernel_height + i) * g.kernel_width + j;
                r.dx[xi] += d * w[wi];
                r.dw[wi] += d * x[xi];
              }
        }
  return r;
}

}  // namespace dl::testing::conv
