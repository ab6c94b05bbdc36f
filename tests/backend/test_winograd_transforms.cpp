// The CPU's Winograd transforms (conv2d_winograd_transforms.hpp): F(4, 3) and F(2, 5) in double
// against a direct correlation (the matrices are right up to their float rounding), the adjoints
// that dx and dW use against the transforms, and the float32 error of the 3x3 layers' F(4, 3) on
// ResNet-20's three layer shapes against a double reference, with either lane width; and the
// passes spread over more tasks (TaskSpread) against the same in their cache-sized chunks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/conv2d_winograd.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace {

namespace wg = dl::cpu::winograd;
using dl::Conv2dGeometry;
using namespace dl::testing::conv;

template <std::size_t kSize>
void fill(double (&a)[kSize], std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& e : a) e = u(rng);
}

template <std::size_t kSize>
double dot(const double (&a)[kSize], const double (&b)[kSize]) {
  double s = 0.0;
  for (std::size_t i = 0; i < kSize; ++i) s += a[i] * b[i];
  return s;
}

// One tile: At [(G g Gt) . (Bt d Btt)] Att against the correlation of d with g.
template <int M, int R>
void check_tile(std::mt19937& rng) {
  constexpr int n = M + R - 1;
  double d[n * n], g[R * R], v[n * n], u[n * n], product[n * n], y[M * M];
  fill(d, rng);
  fill(g, rng);
  wg::input_transform<M, R>(d, v);
  wg::filter_transform<M, R>(g, u);
  for (int p = 0; p < n * n; ++p) product[p] = u[p] * v[p];
  wg::output_transform<M, R>(product, y);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < M; ++j) {
      double direct = 0.0;
      for (int a = 0; a < R; ++a)
        for (int b = 0; b < R; ++b) direct += g[a * R + b] * d[(i + a) * n + j + b];
      // The matrices' entries are floats (1/3, 1/6, ... rounded): about 1e-7 of the terms.
      CHECK(std::abs(y[i * M + j] - direct) < 2e-6);
    }
}

// <T a, b> = <a, T* b> for the input, output and filter transforms and their adjoints.
template <int M, int R>
void check_adjoints(std::mt19937& rng) {
  constexpr int n = M + R - 1;
  double d[n * n], e[n * n], td[n * n], te[n * n];
  fill(d, rng);
  fill(e, rng);
  wg::input_transform<M, R>(d, td);
  wg::input_transform_adjoint<M, R>(e, te);
  CHECK(dot(td, e) == Approx(dot(d, te)).epsilon(1e-12));
  double y[M * M], ty[n * n], m[M * M];
  fill(y, rng);
  wg::output_transform<M, R>(d, m);
  wg::output_transform_adjoint<M, R>(y, ty);
  CHECK(dot(m, y) == Approx(dot(d, ty)).epsilon(1e-12));
  double g[R * R], tg[n * n], dw[R * R], f[R * R];
  fill(g, rng);
  wg::filter_transform<M, R>(g, tg);
  wg::filter_transform_adjoint<M, R>(e, dw);
  std::copy(dw, dw + R * R, f);
  CHECK(dot(tg, e) == Approx(dot(g, f)).epsilon(1e-12));
}

// The largest error over the largest reference value.
double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double error = 0.0, largest = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    error = std::max(error, std::abs(got[i] - want[i]));
    largest = std::max(largest, std::abs(want[i]));
  }
  return error / largest;
}

template <int L>
void check_layer_error(const Conv2dGeometry& g, std::mt19937& rng) {
  const std::vector<float> x = random_values(x_size(g), rng), w = random_values(w_size(g), rng),
                           b(g.out_channels, 0.0f), dy = random_values(y_size(g), rng);
  std::vector<float> ws(dl::cpu::conv2d_winograd_workspace_floats(g)), y(y_size(g)), dx(x_size(g)),
      dw(w_size(g)), db(g.out_channels);
  dl::cpu::conv2d_winograd_forward(g, x.data(), w.data(), b.data(), y.data(), ws.data(), {}, L);
  const dl::cpu::WinogradBackward backward(g, w.data(), dy.data(), dx.data(), x.data(), ws.data(),
                                           L);
  for (int task = 0; task < backward.tasks(); ++task) backward.run(task);
  backward.finish(dw.data(), db.data());
  const Gradients want = reference_backward(g, x, w, dy);
  const double ey = relative_error(y, reference_forward(g, x, w, b));
  const double edx = relative_error(dx, want.dx), edw = relative_error(dw, want.dw);
  std::printf("winograd F(4, 3), %d lanes, %s: y %.2g dx %.2g dw %.2g\n", L, describe(g).c_str(),
              ey, edx, edw);
  // F(2, 3) stayed near 3e-7; F(4, 3) with the points 2 and -1/2 near 2e-6, with +-2 about
  // twice that (conv2d_winograd_transforms.hpp).
  CHECK(ey < 5e-6);
  CHECK(edx < 5e-6);
  CHECK(edw < 5e-6);
}

}  // namespace

TEST_CASE("winograd: F(4, 3) and F(2, 5) tiles equal a direct correlation", "[winograd]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    check_tile<4, 3>(rng);
    check_tile<2, 5>(rng);
  }
}

TEST_CASE("winograd: the transforms' adjoints are their transposes", "[winograd]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    check_adjoints<4, 3>(rng);
    check_adjoints<2, 5>(rng);
  }
}

TEST_CASE("winograd: F(4, 3)'s float32 error on ResNet-20's layers", "[winograd]") {
  std::mt19937 rng(13);
  for (const Conv2dGeometry& g :
       {same_geometry({2, 16, 32, 32, 16, 3, 3}), same_geometry({4, 32, 16, 16, 32, 3, 3}),
        same_geometry({8, 64, 8, 8, 64, 3, 3})}) {
    INFO(describe(g));
    check_layer_error<8>(g, rng);
    if (dl::cpu::winograd_lanes_built(16)) check_layer_error<16>(g, rng);
  }
}

namespace {

struct Backward {
  std::vector<float> dx, dw, db;
};

template <int L>
Backward winograd_backward(const Conv2dGeometry& g, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& dy,
                           dl::cpu::TaskSpread spread) {
  std::vector<float> ws(dl::cpu::conv2d_winograd_workspace_floats(g));
  Backward out{std::vector<float>(x_size(g)), std::vector<float>(w_size(g)),
               std::vector<float>(g.out_channels)};
  const dl::cpu::WinogradBackward backward(g, w.data(), dy.data(), out.dx.data(), x.data(),
                                           ws.data(), L, {}, spread);
  for (int task = 0; task < backward.tasks(); ++task) backward.run(task);
  backward.finish(out.dw.data(), out.db.data());
  return out;
}

template <int L>
void check_spread_products(const Conv2dGeometry& g, std::mt19937& rng) {
  const std::vector<float> x = random_values(x_size(g), rng), w = random_values(w_size(g), rng),
                           dy = random_values(y_size(g), rng);
  const Backward kept = winograd_backward<L>(g, x, w, dy, dl::cpu::TaskSpread::kNever);
  const Backward spread = winograd_backward<L>(g, x, w, dy, dl::cpu::TaskSpread::kAlways);
  // Bit for bit: the choice is made by the thread count, which must not change a result.
  CHECK(kept.dx == spread.dx);
  CHECK(kept.dw == spread.dw);
  CHECK(kept.db == spread.db);
  CHECK(std::any_of(kept.dw.begin(), kept.dw.end(), [](float v) { return v != 0.0f; }));
  // The forward pass in 64-tile and 16-tile tasks.
  std::vector<float> ws(dl::cpu::conv2d_winograd_workspace_floats(g)), b(g.out_channels, 0.5f),
      y_kept(y_size(g)), y_spread(y_size(g));
  dl::cpu::conv2d_winograd_forward(g, x.data(), w.data(), b.data(), y_kept.data(), ws.data(), {},
                                   L, dl::cpu::TaskSpread::kNever);
  dl::cpu::conv2d_winograd_forward(g, x.data(), w.data(), b.data(), y_spread.data(), ws.data(), {},
                                   L, dl::cpu::TaskSpread::kAlways);
  CHECK(y_kept == y_spread);
}

}  // namespace

TEST_CASE("winograd: passes spread over more tasks give the same bits",
          "[winograd]") {
  std::mt19937 rng(17);
  // ResNet-20's 64-channel layer with a short last task (40 = 32 + 8 samples), its 16-channel
  // layer, and a 5x5 layer with channel counts that cut the product's blocks (LeNet's second).
  for (const Conv2dGeometry& g :
       {same_geometry({40, 64, 8, 8, 64, 3, 3}), same_geometry({3, 16, 32, 32, 16, 3, 3}),
        truncate_geometry({6, 20, 12, 12, 50, 5, 5})}) {
    INFO(describe(g));
    check_spread_products<8>(g, rng);
    if (dl::cpu::winograd_lanes_built(16)) check_spread_products<16>(g, rng);
  }
}

// The domain arrays' positions lie an odd number of cache lines apart, so that the n^2 vectors
// of one tile's transform fall in different sets of the L1 cache (ResNet-20's first stage had
// them a whole number of 4 KiB apart: all in one set); a layout alone, which the bit-for-bit
// comparisons above run through.
TEST_CASE("winograd: domain positions are an odd number of cache lines apart", "[winograd]") {
  using dl::cpu::winograd::domain_stride;
  constexpr std::size_t kLine = 16;
  for (const int channels : {1, 8, 16, 20, 32, 64, 50}) {
    for (const std::size_t tiles : {8, 16, 64, 128, 256, 24}) {
      INFO(channels << " channels, " << tiles << " tiles");
      const std::size_t stride = domain_stride(channels, tiles);
      CHECK(stride >= channels * tiles);
      CHECK(stride < channels * tiles + 2 * kLine);
      CHECK(stride % kLine == 0);
      CHECK((stride / kLine) % 2 == 1);
    }
  }
  CHECK(domain_stride(16, 64) == 1040);  // 4 KiB of floats, one line more
}
