// Config::deterministic on a GPU: with true, cuDNN's forward algorithm comes from the fixed rule
// and a repeated step gives the same bits; with false, the timed choice (non-deterministic
// algorithms allowed, transform-domain ones refused) still agrees with the CPU. Both name their
// algorithms for the checkpoint.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "gpu_test_support.hpp"

namespace {

using dl::Conv2dGeometry;
using dl::test::random_floats;
using dl::test::require_close;
using dl::test::to_device;
using dl::test::to_host;
using dl::test::unwritten;

// LeNet's first convolution at a small batch.
Conv2dGeometry lenet_conv1(int batch) {
  Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = 1;
  g.in_height = g.in_width = 28;
  g.out_channels = 20;
  g.out_height = g.out_width = 24;
  g.kernel_height = g.kernel_width = 5;
  return g;
}

struct Gradients {
  std::vector<float> y, dx, dw, db;
};

Gradients run_conv(dl::Backend& b, const Conv2dGeometry& g, const std::vector<float>& x,
                   const std::vector<float>& w, const std::vector<float>& bias,
                   const std::vector<float>& dy) {
  const std::size_t ys = dy.size();
  auto gx = to_device(b, x), gw = to_device(b, w), gb = to_device(b, bias), gdy = to_device(b, dy);
  auto work = unwritten(b, std::max<std::size_t>(b.conv2d_workspace_floats(g), 1));
  auto y = unwritten(b, ys), dx = unwritten(b, x.size()), dw = unwritten(b, w.size()),
       db = unwritten(b, bias.size());
  b.conv2d_forward(g, gx.data(), gw.data(), gb.data(), y.data(), work.data());
  b.conv2d_backward(g, gx.data(), gw.data(), gdy.data(), dx.data(), dw.data(), db.data(),
                    work.data());
  return {to_host(b, y), to_host(b, dx), to_host(b, dw), to_host(b, db)};
}

TEST_CASE("cuda: deterministic true and false: the CPU's results, algorithms named", "[gpu]") {
  SKIP_WITHOUT_GPU();
  const Conv2dGeometry g = lenet_conv1(16);
  const std::size_t xs = 16u * 28 * 28, ws = 20u * 25, ys = 16u * 20 * 24 * 24;
  const auto x = random_floats(xs, 91), w = random_floats(ws, 92, 0.2f),
             bias = random_floats(20, 93), dy = random_floats(ys, 94);
  dl::CpuBackend cpu;
  const Gradients want = run_conv(cpu, g, x, w, bias, dy);
  for (const bool deterministic : {true, false}) {
    INFO("deterministic " << deterministic);
    dl::Config config;
    config.deterministic = deterministic;
    auto gpu = dl::make_backend(dl::BackendKind::kCuda, config, 0);
    const Gradients got = run_conv(*gpu, g, x, w, bias, dy);
    require_close(got.y, want.y, "y");
    require_close(got.dx, want.dx, "dx");
    require_close(got.dw, want.dw, "dw");
    require_close(got.db, want.db, "db");
    const std::string algorithms = gpu->convolution_algorithms();
    INFO(algorithms);
    CHECK(algorithms.find("conv2d 16x1x28x28 -> 20x24x24, kernel 5x5: forward ") == 0);
    CHECK(algorithms.find("FFT") == std::string::npos);
    CHECK(algorithms.find("WINOGRAD") == std::string::npos);
    if (deterministic) {
      CHECK((algorithms.find("forward IMPLICIT_PRECOMP_GEMM") != std::string::npos ||
             algorithms.find("forward IMPLICIT_GEMM") != std::string::npos));
      const Gradients again = run_conv(*gpu, g, x, w, bias, dy);
      CHECK(again.dw == got.dw);
      CHECK(again.dx == got.dx);
      CHECK(again.db == got.db);
    }
  }
}

}  // namespace
