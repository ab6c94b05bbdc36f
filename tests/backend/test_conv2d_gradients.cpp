// The CPU convolution's paths (conv2d_paths.hpp) against finite differences of a scalar loss,
// on 1 to 16 threads (the same bits), and which layers take the direct path.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/conv2d_direct.hpp"
#include "backend/gradient_check.hpp"
#include "backend/op_test_support.hpp"
#include "conv2d_paths.hpp"

using dl::Conv2dGeometry;
using dl::testing::BlasThreads;
using namespace dl::testing::conv;
using namespace dl::testing::conv_paths;

TEST_CASE("conv2d gradients match finite differences", "[conv2d][gradient]") {
  const Path& path = kPaths[GENERATE(0, 1, 2, 3, 4)];
  INFO(path.name);
  std::mt19937 rng(kSeed + 3);
  const std::vector<Conv2dGeometry> cases = {
      truncate_geometry({2, 2, 6, 5, 3, 3, 3}),
      truncate_geometry({2, 1, 7, 9, 6, 3, 4}, 1, 2),
      truncate_geometry({2, 2, 7, 6, 2, 3, 2, 2, 1}, 1, 1),
      same_geometry({1, 2, 7, 8, 3, 4, 3, 2, 2}),
      same_geometry({1, 8, 5, 6, 2, 3, 3}),      // Winograd, 3x3
      same_geometry({2, 8, 5, 8, 2, 3, 3}),      // Winograd, 3x3, row transforms
      truncate_geometry({1, 8, 7, 6, 2, 5, 5}),  // Winograd, 5x5, cut tiles
  };
  for (const Conv2dGeometry& g : cases) {
    if (!takes(path, g)) continue;
    INFO(describe(g));
    Problem p = random_problem(g, rng);
    const std::vector<float>& r = p.dy;  // loss = sum(y * r), so dloss/dy = r
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y(y_size(g));
    const auto loss = [&](const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b) {
      path.forward(g, x.data(), w.data(), b.data(), y.data(), ws.data());
      double sum = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * r[i];
      return sum;
    };
    std::vector<float> dx(x_size(g)), dw(w_size(g)), db(g.out_channels);
    loss(p.x, p.w, p.b);
    path.backward(g, p.x.data(), p.w.data(), r.data(), dx.data(), dw.data(), db.data(), ws.data());
    dl::testing::check_gradient("dx", p.x, dx,
                                [&](const std::vector<float>& v) { return loss(v, p.w, p.b); });
    dl::testing::check_gradient("dw", p.w, dw,
                                [&](const std::vector<float>& v) { return loss(p.x, v, p.b); });
    dl::testing::check_gradient("db", p.b, db,
                                [&](const std::vector<float>& v) { return loss(p.x, p.w, v); });
  }
}

TEST_CASE("conv2d gives the same bits on 1, 2, 3, 4, 8 and 16 threads", "[conv2d]") {
  std::mt19937 rng(kSeed);
  const Path& path = kPaths[GENERATE(0, 2, 4)];
  // LeNet's second layer (dispatched to the Winograd path), a first layer, and a 3x3 layer as
  // ResNet-20's (Winograd for y, dx and dW: tasks of 16 samples, the last of 5).
  const Conv2dGeometry g = GENERATE(truncate_geometry({19, 20, 12, 12, 50, 5, 5}),
                                    truncate_geometry({19, 1, 28, 28, 13, 5, 5}, 1, 0),
                                    truncate_geometry({37, 16, 8, 8, 16, 3, 3}, 1, 1));
  if (!takes(path, g)) return;
  INFO(path.name << ", " << describe(g));
  const Problem p = random_problem(g, rng);
  const auto run = [&](int threads) {
    const BlasThreads blas(threads);
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g));
    dl::testing::LayerPass r{std::vector<float>(y_size(g)), std::vector<float>(x_size(g)),
                             std::vector<float>(w_size(g)), std::vector<float>(g.out_channels)};
    path.forward(g, p.x.data(), p.w.data(), p.b.data(), r.y.data(), ws.data());
    path.backward(g, p.x.data(), p.w.data(), p.dy.data(), r.dx.data(), r.dw.data(), r.db.data(),
                  ws.data());
    return r;
  };
  dl::testing::check_same_bits_on_any_thread_count(run);
}

TEST_CASE("conv2d takes the direct path for stride-1 layers with few taps", "[conv2d]") {
  // Builds for plain x86-64 keep the columns path (conv2d_direct_kernels.hpp).
  const bool built = dl::cpu::conv2d_direct_pays();
  CHECK(dl::cpu::conv2d_direct_applies(truncate_geometry({128, 1, 28, 28, 20, 5, 5})) == built);
  CHECK(dl::cpu::conv2d_direct_applies(truncate_geometry({3, 2, 11, 13, 7, 3, 5}, 1, 2)) == built);
  CHECK_FALSE(dl::cpu::conv2d_direct_applies(truncate_geometry({128, 20, 12, 12, 50, 5, 5})));
  CHECK_FALSE(dl::cpu::conv2d_direct_applies(truncate_geometry({2, 3, 9, 8, 5, 3, 3, 2, 2})));
}