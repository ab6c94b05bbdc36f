// Every CUDA backend op against the CPU backend (the reference semantics) on random inputs,
// forward and backward: the flat-buffer ops, dense, convolution, pooling, activations and the
// output layer (dropout, batch norm, updaters, memory and streams: test_cuda_ops_state.cpp).
// Tolerance: gpu_test_support.hpp's kRelativeTolerance; max-pooling outputs and argmax and fills
// must be exactly equal. Each case is tagged [gpu] and returns at once, counted as skipped, when
// no CUDA device is visible.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/activation_reference.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "gpu_test_support.hpp"

namespace {

using dl::Activation;
using dl::Backend;
using dl::Conv2dGeometry;
using dl::FloatBuffer;
using dl::IndexBuffer;
using dl::test::random_floats;
using dl::test::require_close;
using dl::test::to_device;
using dl::test::to_host;
using dl::test::unwritten;
using dl::test::unwritten_host;

using dl::test::cpu;
using dl::test::gpu_backends;

Conv2dGeometry geometry(int batch, int in_c, int in_h, int in_w, int out_c, int kernel, int stride,
                        int pad_top, int pad_left, int out_h, int out_w) {
  Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = in_c;
  g.in_height = in_h;
  g.in_width = in_w;
  g.out_channels = out_c;
  g.out_height = out_h;
  g.out_width = out_w;
  g.kernel_height = g.kernel_width = kernel;
  g.stride_height = g.stride_width = stride;
  g.pad_top = pad_top;
  g.pad_left = pad_left;
  return g;
}

std::size_t input_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels * g.in_height * g.in_width;
}
std::size_t output_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}

// Runs conv2d forward and backward on both backends for geometry `run`; the GPU workspace is
// sized for `bound` (same shape, batch >= run.batch), as a layer bound for a larger batch does.
void check_conv2d(Backend& gpu, const Conv2dGeometry& bound, const Conv2dGeometry& run) {
  const std::size_t weights = static_cast<std::size_t>(run.out_channels) * run.in_channels *
                              run.kernel_height * run.kernel_width;
  const auto x = random_floats(input_size(run), 11);
  const auto w = random_floats(weights, 12, 0.3f);
  const auto b = random_floats(static_cast<std::size_t>(run.out_channels), 13);
  const auto dy = random_floats(output_size(run), 14);

  std::vector<float> cpu_ws(cpu().conv2d_workspace_floats(run));
  auto y = unwritten_host(output_size(run));
  cpu().conv2d_forward(run, x.data(), w.data(), b.data(), y.data(), cpu_ws.data());
  auto dx = unwritten_host(input_size(run)), dw = unwritten_host(weights),
       db = unwritten_host(static_cast<std::size_t>(run.out_channels));
  cpu().conv2d_backward(run, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                        cpu_ws.data());

  FloatBuffer ws(gpu, gpu.conv2d_workspace_floats(bound));
  auto gx = to_device(gpu, x), gw = to_device(gpu, w), gb = to_device(gpu, b),
       gdy = to_device(gpu, dy);
  auto gy = unwritten(gpu, y.size());
  gpu.conv2d_forward(run, gx.data(), gw.data(), gb.data(), gy.data(), ws.data());
  require_close(to_host(gpu, gy), y, "conv2d y");
  auto gdx = unwritten(gpu, dx.size()), gdw = unwritten(gpu, dw.size()),
       gdb = unwritten(gpu, db.size());
  gpu.conv2d_backward(run, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(),
                      ws.data());
  require_close(to_host(gpu, gdx), dx, "conv2d dx");
  require_close(to_host(gpu, gdw), dw, "conv2d dw");
  require_close(to_host(gpu, gdb), db, "conv2d db");
  // Without dx (first layer) the weight gradients are the same.
  auto gdw2 = unwritten(gpu, dw.size()), gdb2 = unwritten(gpu, db.size());
  gpu.conv2d_backward(run, gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(), gdb2.data(),
                      ws.data());
  require_close(to_host(gpu, gdw2), dw, "conv2d dw without dx");
}

// Pooling both ways; `x` may hold ties. Max pooling must match exactly (outputs and argmax).
void check_pool2d(Backend& gpu, const dl::Pool2dGeometry& g, dl::PoolingType type,
                  const std::vector<float>& x) {
  const std::size_t outputs = output_size(g);
  auto y = unwritten_host(outputs);
  std::vector<std::int32_t> argmax(outputs, 0);
  cpu().pool2d_forward(g, type, x.data(), y.data(), argmax.data());
  const auto dy = random_floats(outputs, 21);
  auto dx = unwritten_host(x.size());
  cpu().pool2d_backward(g, type, x.data(), y.data(), dy.data(), dx.data(), argmax.data());

  auto gx = to_device(gpu, x), gdy = to_device(gpu, dy);
  auto gy = unwritten(gpu, outputs);
  IndexBuffer gargmax(gpu, outputs);
  gpu.pool2d_forward(g, type, gx.data(), gy.data(), gargmax.data());
  if (type == dl::PoolingType::kMax) {
    REQUIRE(to_host(gpu, gy) == y);
    REQUIRE(to_host(gpu, gargmax) == argmax);
  } else {
    require_close(to_host(gpu, gy), y, "avg pool y");
  }
  auto gdx = unwritten(gpu, x.size());
  gpu.pool2d_backward(g, type, gx.data(), gy.data(), gdy.data(), gdx.data(), gargmax.data());
  require_close(to_host(gpu, gdx), dx, "pool dx");
}

std::vector<float> with_ties(std::size_t n, std::uint64_t stream) {
  auto v = random_floats(n, stream);
  for (float& x : v) x = std::round(x);  // few distinct values: many equal maxima
  return v;
}

}  // namespace

TEST_CASE("cuda: fill, scale, axpy, sum_of_squares and all_finite match the CPU", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kN = 10007;
  for (auto& gpu : gpu_backends()) {
    const auto x = random_floats(kN, 2), y = random_floats(kN, 3);
    auto xc = x, yc = y;
    cpu().scale(kN, 0.5f, xc.data());
    cpu().axpy(kN, -1.5f, xc.data(), yc.data());
    float sum = 0.0f;
    cpu().sum_of_squares(kN, yc.data(), &sum);

    auto gx = to_device(*gpu, x), gy = to_device(*gpu, y);
    gpu->scale(kN, 0.5f, gx.data());
    REQUIRE(to_host(*gpu, gx) == xc);  // one rounding: exact
    gpu->axpy(kN, -1.5f, gx.data(), gy.data());
    require_close(to_host(*gpu, gy), yc, "axpy");
    FloatBuffer gsum(*gpu, 1);
    gpu->sum_of_squares(kN, gy.data(), gsum.data());
    require_close(to_host(*gpu, gsum), {sum}, "sum_of_squares");

    gpu->fill(gx.data(), kN, 2.5f);
    REQUIRE(to_host(*gpu, gx) == std::vector<float>(kN, 2.5f));
    CHECK(gpu->all_finite(kN, gx.data()));
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      gpu->upload(gx.data() + kN - 1, &bad, sizeof bad);
      CHECK_FALSE(gpu->all_finite(kN, gx.data()));
      CHECK(gpu->all_finite(kN - 1, gx.data()));
    }
  }
}

TEST_CASE("cuda: dense forward and backward match the CPU", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 7, kIn = 13, kOut = 5;
  auto gpu = dl::test::make_gpu_backend();
  const auto x = random_floats(kN * kIn, 4), w = random_floats(kIn * kOut, 5),
             b = random_floats(kOut, 6), dy = random_floats(kN * kOut, 7);
  auto y = unwritten_host(kN * kOut), dx = unwritten_host(kN * kIn),
       dw = unwritten_host(kIn * kOut), db = unwritten_host(kOut);
  cpu().dense_forward(kN, kIn, kOut, x.data(), w.data(), b.data(), y.data());
  cpu().dense_backward(kN, kIn, kOut, x.data(), w.data(), dy.data(), dx.data(), dw.data(),
                       db.data());

  auto gx = to_device(*gpu, x), gw = to_device(*gpu, w), gb = to_device(*gpu, b),
       gdy = to_device(*gpu, dy);
  auto gy = unwritten(*gpu, y.size());
  gpu->dense_forward(kN, kIn, kOut, gx.data(), gw.data(), gb.data(), gy.data());
  require_close(to_host(*gpu, gy), y, "dense y");
  auto gdx = unwritten(*gpu, dx.size()), gdw = unwritten(*gpu, dw.size()),
       gdb = unwritten(*gpu, db.size());
  gpu->dense_backward(kN, kIn, kOut, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                      gdb.data());
  require_close(to_host(*gpu, gdx), dx, "dense dx");
  require_close(to_host(*gpu, gdw), dw, "dense dw");
  // Summed in double (ops/bias_sums.hpp), in float by the CPU: close, not the same bits.
  require_close(to_host(*gpu, gdb), db, "dense db");
  gpu->dense_backward(kN, kIn, kOut, gx.data(), gw.data(), gdy.data(), nullptr, gdw.data(),
                      gdb.data());
  require_close(to_host(*gpu, gdw), dw, "dense dw without dx");
}

TEST_CASE("cuda: conv2d matches the CPU, symmetric and asymmetric padding", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto gpu = dl::test::make_gpu_backend();
  SECTION("LeNet-like, no padding") {
    const auto g = geometry(4, 1, 12, 12, 4, 5, 1, 0, 0, 8, 8);
    check_conv2d(*gpu, g, g);
  }
  SECTION("stride 2, symmetric padding (cuDNN pads)") {
    const auto g = geometry(3, 3, 9, 9, 5, 3, 2, 1, 1, 5, 5);
    check_conv2d(*gpu, g, g);
  }
  SECTION("Same mode, even kernel: one more row and column below and right") {
    const auto g = geometry(2, 2, 8, 8, 3, 4, 1, 1, 1, 8, 8);
    check_conv2d(*gpu, g, g);
  }
  SECTION("Same mode, stride 2: padding only below and right") {
    const auto g = geometry(2, 2, 8, 8, 3, 3, 2, 0, 0, 4, 4);
    check_conv2d(*gpu, g, g);
  }
  SECTION("a smaller batch than the workspace was sized for") {
    const auto bound = geometry(6, 2, 10, 10, 4, 3, 1, 0, 0, 8, 8);
    auto run = bound;
    run.batch = 3;
    check_conv2d(*gpu, bound, run);
    const auto padded_bound = geometry(6, 2, 8, 8, 3, 4, 1, 1, 1, 8, 8);
    auto padded_run = padded_bound;
    padded_run.batch = 1;
    check_conv2d(*gpu, padded_bound, padded_run);
  }
}

TEST_CASE("cuda: conv2d without a sized workspace is refused", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto gpu = dl::test::make_gpu_backend();
  const auto g = geometry(2, 1, 6, 6, 2, 3, 1, 0, 0, 4, 4);
  FloatBuffer x(*gpu, input_size(g)), w(*gpu, 18), b(*gpu, 2), y(*gpu, output_size(g));
  REQUIRE_THROWS_AS(gpu->conv2d_forward(g, x.data(), w.data(), b.data(), y.data(), nullptr),
                    dl::InternalError);
}

TEST_CASE("cuda: pooling matches the CPU, argmax convention included", "[gpu]") {
  SKIP_WITHOUT_GPU();
  for (auto& gpu : gpu_backends()) {
    for (const auto type : {dl::PoolingType::kMax, dl::PoolingType::kAvg}) {
      INFO("type " << static_cast<int>(type));
      const auto tiled = geometry(2, 3, 8, 8, 3, 2, 2, 0, 0, 4, 4);
      check_pool2d(*gpu, tiled, type, with_ties(input_size(tiled), 31));
      const auto overlapping = geometry(2, 3, 9, 9, 3, 3, 2, 1, 1, 5, 5);
      check_pool2d(*gpu, overlapping, type, with_ties(input_size(overlapping), 32));
      // Windows wholly in the padding: output 0, argmax -1, no gradient.
      const auto padding_only = geometry(1, 2, 4, 4, 2, 2, 2, 2, 2, 4, 4);
      check_pool2d(*gpu, padding_only, type, random_floats(input_size(padding_only), 33));
      // Inputs no window covers get a zero gradient.
      const auto uncovered = geometry(2, 1, 7, 7, 1, 2, 2, 0, 0, 3, 3);
      check_pool2d(*gpu, uncovered, type, random_floats(input_size(uncovered), 34));
    }
  }
}

TEST_CASE("cuda: activations match the CPU, forward, backward and in place", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kRows = 5, kCols = 37, kN = kRows * kCols;
  for (auto& gpu : gpu_backends()) {
    for (const Activation a : dl::testing::all_activations()) {
      INFO("activation " << dl::enum_name(a));
      const auto x = random_floats(kN, 41, 2.0f), dy = random_floats(kN, 42);
      auto y = unwritten_host(kN), dx = unwritten_host(kN);
      cpu().activation_forward(a, kRows, kCols, x.data(), y.data());
      cpu().activation_backward(a, kRows, kCols, x.data(), y.data(), dy.data(), dx.data());

      auto gx = to_device(*gpu, x), gdy = to_device(*gpu, dy);
      auto gy = unwritten(*gpu, kN), gdx = unwritten(*gpu, kN);
      gpu->activation_forward(a, kRows, kCols, gx.data(), gy.data());
      require_close(to_host(*gpu, gy), y, "activation y");
      gpu->activation_backward(a, kRows, kCols, gx.data(), gy.data(), gdy.data(), gdx.data());
      require_close(to_host(*gpu, gdx), dx, "activation dx");
      // In place: dy -> dx in dy's buffer, then x -> y in x's buffer (x read first where the
      // gradient needs it).
      gpu->activation_backward(a, kRows, kCols, gx.data(), gy.data(), gdy.data(), gdy.data());
      require_close(to_host(*gpu, gdy), dx, "activation dx in place");
      gpu->activation_forward(a, kRows, kCols, gx.data(), gx.data());
      require_close(to_host(*gpu, gx), y, "activation y in place");
    }
  }
}

TEST_CASE("cuda: fused output activation and loss match the CPU", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 9, kK = 10;
  constexpr float kGradScale = 1.0f / kN;
  std::vector<std::int32_t> labels(kN);
  for (int i = 0; i < kN; ++i) labels[i] = (i * 7 + 3) % kK;
  struct Case {
    dl::LossFunction loss;
    Activation act;
  };
  for (auto& gpu : gpu_backends()) {
    for (const Case c : {Case{dl::LossFunction::kNegativeLogLikelihood, Activation::kSoftmax},
                         Case{dl::LossFunction::kMcxent, Activation::kSoftmax},
                         Case{dl::LossFunction::kMse, Activation::kSoftmax},
                         Case{dl::LossFunction::kMcxent, Activation::kSigmoid},
                         Case{dl::LossFunction::kMse, Activation::kIdentity}}) {
      INFO("loss " << static_cast<int>(c.loss) << ", activation " << static_cast<int>(c.act));
      const auto z = random_floats(kN * kK, 51, 2.0f);
      auto out = unwritten_host(z.size()), dz = unwritten_host(z.size());
      float loss_sum = 0.0f;
      cpu().output_loss({c.loss, c.act}, kN, kK, z.data(), labels.data(), out.data(), dz.data(),
                        kGradScale, &loss_sum);

      auto gz = to_device(*gpu, z);
      auto glabels = to_device(*gpu, labels);
      auto gout = unwritten(*gpu, z.size()), gdz = unwritten(*gpu, z.size()),
           gloss = unwritten(*gpu, 1);
      gpu->output_loss({c.loss, c.act}, kN, kK, gz.data(), glabels.data(), gout.data(), gdz.data(),
                       kGradScale, gloss.data());
      require_close(to_host(*gpu, gout), out, "output activation");
      require_close(to_host(*gpu, gdz), dz, "output dz");
      require_close(to_host(*gpu, gloss), {loss_sum}, "loss sum");
    }
  }
}

TEST_CASE("cuda: count_correct counts the CPU's correct rows, ties to the first maximum", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 75, kK = 10;
  auto z = random_floats(kN * kK, 53);
  z[3 * kK + 2] = z[3 * kK + 7] = 9.0f;  // a tie: the first maximum (class 2) is the prediction
  std::vector<std::int32_t> labels(kN);
  for (int i = 0; i < kN; ++i) labels[i] = (i * 3 + 1) % kK;
  labels[3] = 7;
  auto cpu_count = unwritten_host(1);
  cpu().count_correct(kN, kK, z.data(), labels.data(), cpu_count.data());
  for (auto& gpu : gpu_backends()) {
    auto gz = to_device(*gpu, z);
    auto glabels = to_device(*gpu, labels);
    auto gcount = unwritten(*gpu, 1);
    gpu->count_correct(kN, kK, gz.data(), glabels.data(), gcount.data());
    CHECK(to_host(*gpu, gcount)[0] == cpu_count[0]);
  }
}

TEST_CASE("cuda: a label outside [0, k) makes the loss NaN instead of reading out of bounds",
          "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 3, kK = 4;
  auto gpu = dl::test::make_gpu_backend();
  auto gz = to_device(*gpu, random_floats(kN * kK, 52));
  auto glabels = to_device(*gpu, std::vector<std::int32_t>{0, kK, 1});
  FloatBuffer out(*gpu, kN * kK), dz(*gpu, kN * kK), loss(*gpu, 1);
  gpu->output_loss({dl::LossFunction::kNegativeLogLikelihood, Activation::kSoftmax}, kN, kK,
                   gz.data(), glabels.data(), out.data(), dz.data(), 1.0f, loss.data());
  CHECK(std::isnan(to_host(*gpu, loss)[0]));
}
