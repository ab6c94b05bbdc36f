// The CPU pooling against direct window loops, and against finite differences of a scalar loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/pooling.hpp"
#include "backend/gradient_check.hpp"
#include "backend/op_test_support.hpp"

namespace {

using dl::testing::check_close;
using dl::testing::Guarded;

using dl::Pool2dGeometry;
using dl::PoolingType;

constexpr double kTolerance = 1e-5;
constexpr unsigned kSeed = 7321;
// Distinct inputs for the finite-difference test are this far apart, so a step never changes the
// winner; elsewhere they span [-1, 1), so that sums of them lose no more than float rounding.
constexpr float kValueSpacing = 0.1f;
constexpr float kValueRange = 2.0f;

struct Shape {
  int batch, channels, in_height, in_width, kernel_height, kernel_width;
  int stride_height, stride_width;
};

// A pooling geometry is a convolution's with as many output channels as input ones: the
// convolution tests' builders (conv2d_reference.hpp) hold the Truncate and Same rules.
dl::testing::conv::Shape conv_shape(const Shape& s) {
  return {s.batch,         s.channels,     s.in_height,     s.in_width,    s.channels,
          s.kernel_height, s.kernel_width, s.stride_height, s.stride_width};
}
Pool2dGeometry truncate_geometry(const Shape& s, int pad_h = 0, int pad_w = 0) {
  return dl::testing::conv::truncate_geometry(conv_shape(s), pad_h, pad_w);
}
Pool2dGeometry same_geometry(const Shape& s) {
  return dl::testing::conv::same_geometry(conv_shape(s));
}
using dl::testing::conv::describe;

std::size_t planes(const Pool2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels;
}
std::size_t in_plane(const Pool2dGeometry& g) {
  return static_cast<std::size_t>(g.in_height) * g.in_width;
}
std::size_t out_plane(const Pool2dGeometry& g) {
  return static_cast<std::size_t>(g.out_height) * g.out_width;
}

// n distinct values, `spacing` apart and centred on zero, in random order: max pooling then has
// no ties.
std::vector<float> distinct_values(std::size_t n, float spacing, std::mt19937& rng) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = (static_cast<float>(i) - static_cast<float>(n) / 2) * spacing;
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& e : v) e = dist(rng);
  return v;
}

struct Reference {
  std::vector<double> y;
  std::vector<std::int32_t> winner;  // max: index of the largest input inside its plane
  std::vector<double> dx;
};

// Direct pooling over the window cells that lie inside the input; padding counts as zero for
// average pooling (the divisor is always the full kernel area) and never wins a maximum.
Reference reference(const Pool2dGeometry& g, PoolingType type, const std::vector<float>& x,
                    const std::vector<float>& dy) {
  Reference r{std::vector<double>(planes(g) * out_plane(g)),
              std::vector<std::int32_t>(planes(g) * out_plane(g), -1),
              std::vector<double>(x.size())};
  const double area = g.kernel_height * g.kernel_width;
  for (std::size_t pl = 0; pl < planes(g); ++pl)
    for (int oh = 0; oh < g.out_height; ++oh)
      for (int ow = 0; ow < g.out_width; ++ow) {
        const std::size_t o = pl * out_plane(g) + oh * g.out_width + ow;
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int i = 0; i < g.kernel_height; ++i)
          for (int j = 0; j < g.kernel_width; ++j) {
            const int ih = oh * g.stride_height + i - g.pad_top;
            const int iw = ow * g.stride_width + j - g.pad_left;
            if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
            const double v = x[pl * in_plane(g) + ih * g.in_width + iw];
            sum += v;
            if (v > best) {
              best = v;
              r.winner[o] = ih * g.in_width + iw;
            }
            if (type == PoolingType::kAvg)
              r.dx[pl * in_plane(g) + ih * g.in_width + iw] += dy[o] / area;
          }
        if (type == PoolingType::kAvg) {
          r.y[o] = sum / area;
        } else {
          r.y[o] = best;
          r.dx[pl * in_plane(g) + r.winner[o]] += dy[o];
        }
      }
  return r;
}

std::vector<Pool2dGeometry> geometries() {
  return {
      truncate_geometry({2, 3, 24, 24, 2, 2, 2, 2}),      // LeNet's first pooling
      truncate_geometry({4, 20, 24, 24, 2, 2, 2, 2}),     // many planes: rows in several blocks
      truncate_geometry({2, 3, 8, 8, 2, 2, 2, 2}),        // LeNet's second pooling
      truncate_geometry({2, 2, 7, 5, 2, 2, 2, 2}),        // odd input: last row/column unused
      truncate_geometry({2, 3, 6, 12, 2, 2, 2, 2}),       // rows of 12: two chunks of 8 overlap
      truncate_geometry({1, 2, 4, 35, 2, 2, 2, 2}),       // rows of 34 of 35: chunks of 16 overlap
      truncate_geometry({2, 2, 7, 7, 3, 3, 2, 2}),        // overlapping windows
      truncate_geometry({2, 2, 6, 5, 3, 3, 1, 1}, 1, 1),  // padding, stride 1
      truncate_geometry({1, 2, 9, 10, 2, 3, 1, 2}),       // non-square kernel and stride
      truncate_geometry({2, 2, 9, 9, 3, 3, 3, 3}),        // 3x3 tiles
      truncate_geometry({2, 2, 10, 11, 3, 3, 3, 3}),      // 3x3 tiles with a remainder
      same_geometry({2, 2, 5, 5, 2, 2, 2, 2}),            // Same: padding only after
      same_geometry({2, 2, 7, 9, 4, 3, 2, 2}),            // Same: asymmetric padding both sides
      same_geometry({1, 3, 6, 7, 3, 3, 1, 1}),            // Same, stride 1
  };
}

}  // namespace

TEST_CASE("pooling matches direct window loops, forward and backward", "[pooling]") {
  std::mt19937 rng(kSeed);
  for (const PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    for (const Pool2dGeometry& g : geometries()) {
      INFO(describe(g) << (type == PoolingType::kMax ? " max" : " avg"));
      const std::size_t n = planes(g) * in_plane(g);
      const std::vector<float> x = distinct_values(n, kValueRange / static_cast<float>(n), rng);
      const std::vector<float> dy = random_values(planes(g) * out_plane(g), rng);
      Guarded<float> y(dy.size()), dx(x.size());
      Guarded<std::int32_t> argmax(dy.size(), -2, 0x5a5a5a5a);

      dl::cpu::pool2d_forward(g, type, x.data(), y.get(), argmax.get());
      const Reference want = reference(g, type, x, dy);
      check_close("y", y.get(), want.y, kTolerance);
      if (type == PoolingType::kMax) {
        std::size_t wrong = 0;
        for (std::size_t o = 0; o < dy.size(); ++o) wrong += argmax.get()[o] != want.winner[o];
        INFO("argmax differs from the plane index of the largest input at " << wrong << " outputs");
        CHECK(wrong == 0);
      }
      dl::cpu::pool2d_backward(g, type, x.data(), y.get(), dy.data(), dx.get(), argmax.get());
      check_close("dx", dx.get(), want.dx, kTolerance);
      CHECK(y.guard_intact());
      CHECK(dx.guard_intact());
      CHECK(argmax.guard_intact());
    }
  }
}

// Tasks take fewer planes where the threads are many (items_per_task): each plane must still get
// the same bits. ResNet-20's global pooling (8x8 planes) and a 2x2 pooling, over enough planes for
// several tasks on one thread.
TEST_CASE("pooling gives the same bits on 1, 2, 3 and 16 threads", "[pooling][thread_pool]") {
  std::mt19937 rng(kSeed);
  for (const PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    for (const Pool2dGeometry& g : {truncate_geometry({128, 64, 8, 8, 8, 8, 8, 8}),
                                    truncate_geometry({16, 100, 24, 24, 2, 2, 2, 2})}) {
      INFO(describe(g) << (type == PoolingType::kMax ? " max" : " avg"));
      const std::vector<float> x = random_values(planes(g) * in_plane(g), rng);
      const std::vector<float> dy = random_values(planes(g) * out_plane(g), rng);
      const auto run = [&](int threads) {
        const dl::testing::BlasThreads blas(threads);
        std::vector<float> y(dy.size()), dx(x.size());
        std::vector<std::int32_t> argmax(dy.size());
        dl::cpu::pool2d_forward(g, type, x.data(), y.data(), argmax.data());
        dl::cpu::pool2d_backward(g, type, x.data(), y.data(), dy.data(), dx.data(), argmax.data());
        return std::make_pair(y, dx);
      };
      const auto one = run(1);
      for (int threads : {2, 3, 16}) {
        INFO(threads << " threads");
        const auto other = run(threads);
        CHECK(other.first == one.first);
        CHECK(other.second == one.second);
      }
    }
  }
}

TEST_CASE("max pooling picks the first of equal maxima", "[pooling]") {
  // One 2x2 window of equal values and one 3x3 window whose two largest are equal.
  const std::vector<float> x2 = {1.0f, 1.0f, 1.0f, 1.0f};
  Pool2dGeometry g = truncate_geometry({1, 1, 2, 2, 2, 2, 2, 2});
  float y = 0.0f;
  std::int32_t at = -2;
  dl::cpu::pool2d_forward(g, PoolingType::kMax, x2.data(), &y, &at);
  CHECK(y == 1.0f);
  CHECK(at == 0);

  const std::vector<float> x3 = {0.0f, 0.0f, 0.0f, 0.0f, 5.0f, 0.0f, 0.0f, 5.0f, 0.0f};
  g = truncate_geometry({1, 1, 3, 3, 3, 3, 1, 1});
  dl::cpu::pool2d_forward(g, PoolingType::kMax, x3.data(), &y, &at);
  CHECK(y == 5.0f);
  CHECK(at == 4);

  // Windows clipped by padding: every window of this 2x2 input covers all four equal cells.
  g = truncate_geometry({1, 1, 2, 2, 3, 3, 1, 1}, 1, 1);
  std::vector<float> y4(4);
  std::vector<std::int32_t> at4(4, -2);
  dl::cpu::pool2d_forward(g, PoolingType::kMax, x2.data(), y4.data(), at4.data());
  CHECK(y4 == std::vector<float>(4, 1.0f));
  CHECK(at4 == std::vector<std::int32_t>(4, 0));
}

TEST_CASE("max pooling picks the first of equal maxima in rows of every length", "[pooling]") {
  // Rows too short for a chunk, of one chunk of 8, of overlapping chunks of 8 and of 16: every
  // window's cells are equal, so every winner is its window's top-left cell.
  for (const int width : {6, 8, 12, 16, 24, 34}) {
    const Pool2dGeometry g = truncate_geometry({2, 2, 4, width, 2, 2, 2, 2});
    INFO(describe(g));
    const std::vector<float> x(planes(g) * in_plane(g), 1.5f);
    std::vector<float> y(planes(g) * out_plane(g));
    std::vector<std::int32_t> at(y.size(), -2);
    dl::cpu::pool2d_forward(g, PoolingType::kMax, x.data(), y.data(), at.data());
    CHECK(y == std::vector<float>(y.size(), 1.5f));
    std::size_t wrong = 0;
    for (std::size_t o = 0; o < at.size(); ++o) {
      const int oh = static_cast<int>(o % out_plane(g)) / g.out_width;
      const int ow = static_cast<int>(o % out_plane(g)) % g.out_width;
      wrong += at[o] != 2 * oh * width + 2 * ow;
    }
    CHECK(wrong == 0);
    // Backward sends each output's gradient to its winner alone.
    const std::vector<float> dy(y.size(), 2.0f);
    std::vector<float> dx(x.size(), -1.0f);
    dl::cpu::pool2d_backward(g, PoolingType::kMax, x.data(), y.data(), dy.data(), dx.data(),
                             at.data());
    std::size_t misplaced = 0;
    for (std::size_t i = 0; i < dx.size(); ++i) {
      const int row = static_cast<int>(i % in_plane(g)) / width;
      const int col = static_cast<int>(i % in_plane(g)) % width;
      const bool winner = row % 2 == 0 && col % 2 == 0;
      misplaced += dx[i] != (winner ? 2.0f : 0.0f);
    }
    CHECK(misplaced == 0);
  }
}

TEST_CASE("pooling windows that lie entirely in the padding output zero", "[pooling]") {
  // A 1x1 window with padding 1 around a 2x2 input: the outer ring of the 4x4 output sees only
  // padding, the inner 2x2 sees the input itself.
  const Pool2dGeometry g = truncate_geometry({1, 1, 2, 2, 1, 1, 1, 1}, 1, 1);
  REQUIRE(g.out_height == 4);
  REQUIRE(g.out_width == 4);
  const std::vector<float> x = {-1.0f, -2.0f, -3.0f, -4.0f};
  std::vector<float> dy(16);
  std::iota(dy.begin(), dy.end(), 1.0f);
  for (const PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    INFO((type == PoolingType::kMax ? "max" : "avg"));
    std::vector<float> y(16, 99.0f), dx(4, 99.0f);
    std::vector<std::int32_t> argmax(16, -2);
    dl::cpu::pool2d_forward(g, type, x.data(), y.data(), argmax.data());
    for (int oh = 0; oh < 4; ++oh) {
      for (int ow = 0; ow < 4; ++ow) {
        const bool inside = oh >= 1 && oh <= 2 && ow >= 1 && ow <= 2;
        const int at = (oh - 1) * 2 + (ow - 1);
        CHECK(y[oh * 4 + ow] == (inside ? x[at] : 0.0f));
        if (type == PoolingType::kMax) CHECK(argmax[oh * 4 + ow] == (inside ? at : -1));
      }
    }
    dl::cpu::pool2d_backward(g, type, x.data(), y.data(), dy.data(), dx.data(), argmax.data());
    // Input (ih, iw) is the only cell of output (ih + 1, iw + 1)'s window.
    CHECK(dx == std::vector<float>{dy[5], dy[6], dy[9], dy[10]});
  }
}

TEST_CASE("pooling gradients match finite differences", "[pooling][gradient]") {
  std::mt19937 rng(kSeed + 1);
  const std::vector<Pool2dGeometry> cases = {
      truncate_geometry({2, 2, 6, 6, 2, 2, 2, 2}),
      truncate_geometry({1, 2, 7, 7, 3, 3, 2, 2}),
      truncate_geometry({1, 2, 5, 6, 3, 2, 1, 1}, 1, 1),
      same_geometry({1, 2, 7, 9, 4, 3, 2, 2}),
  };
  for (const PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    for (const Pool2dGeometry& g : cases) {
      INFO(describe(g) << (type == PoolingType::kMax ? " max" : " avg"));
      std::vector<float> x = distinct_values(planes(g) * in_plane(g), kValueSpacing, rng);
      const std::vector<float> r = random_values(planes(g) * out_plane(g), rng);
      std::vector<float> y(r.size()), dx(x.size());
      std::vector<std::int32_t> argmax(r.size());
      const auto loss = [&](const std::vector<float>& v) {
        dl::cpu::pool2d_forward(g, type, v.data(), y.data(), argmax.data());
        double sum = 0.0;
        for (std::size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * r[i];
        return sum;
      };
      loss(x);
      dl::cpu::pool2d_backward(g, type, x.data(), y.data(), r.data(), dx.data(), argmax.data());
      dl::testing::check_gradient("dx", x, dx, loss);
    }
  }
}
