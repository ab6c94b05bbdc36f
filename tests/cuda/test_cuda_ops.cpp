// Every CUDA backend op against the CPU backend (the reference semantics) on random inputs,
// forward and backward. Tolerance: gpu_test_support.hpp's kRelativeTolerance; dropout masks,
// max-pooling outputs and argmax, fills and copies must be exactly equal. Each case is tagged
// [gpu] and returns at once, counted as skipped, when no CUDA device is visible.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "caching_allocator.hpp"
#include "core/error.hpp"
#include "cuda_backend.hpp"
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

using dl::test::kTightBlock;
using dl::test::kTightGrid;

dl::CpuBackend& cpu() {
  static dl::CpuBackend backend;
  return backend;
}

std::vector<std::unique_ptr<Backend>> gpu_backends() {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(dl::test::make_gpu_backend());
  b.push_back(dl::test::make_gpu_backend(kTightGrid, kTightBlock));
  return b;
}

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

TEST_CASE("cuda: upload, download and copy move bytes exactly", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto gpu = dl::test::make_gpu_backend();
  const auto host = random_floats(1000, 1);
  auto a = to_device(*gpu, host);
  FloatBuffer b(*gpu, host.size());
  gpu->copy(b.data(), a.data(), host.size() * sizeof(float));
  REQUIRE(to_host(*gpu, b) == host);
  REQUIRE_THROWS_AS(gpu->copy(a.data() + 1, a.data(), 10 * sizeof(float)), dl::InternalError);
}

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
    for (const Activation a : {Activation::kIdentity, Activation::kRelu, Activation::kLeakyRelu,
                               Activation::kTanh, Activation::kSigmoid, Activation::kSoftmax}) {
      INFO("activation " << static_cast<int>(a));
      const auto x = random_floats(kN, 41, 2.0f), dy = random_floats(kN, 42);
      auto y = unwritten_host(kN), dx = unwritten_host(kN);
      cpu().activation_forward(a, kRows, kCols, x.data(), y.data());
      cpu().activation_backward(a, kRows, kCols, y.data(), dy.data(), dx.data());

      auto gx = to_device(*gpu, x), gdy = to_device(*gpu, dy);
      auto gy = unwritten(*gpu, kN), gdx = unwritten(*gpu, kN);
      gpu->activation_forward(a, kRows, kCols, gx.data(), gy.data());
      require_close(to_host(*gpu, gy), y, "activation y");
      gpu->activation_backward(a, kRows, kCols, gy.data(), gdy.data(), gdx.data());
      require_close(to_host(*gpu, gdx), dx, "activation dx");
      // In place: x -> y in x's buffer, dy -> dx in dy's buffer.
      gpu->activation_forward(a, kRows, kCols, gx.data(), gx.data());
      require_close(to_host(*gpu, gx), y, "activation y in place");
      gpu->activation_backward(a, kRows, kCols, gx.data(), gdy.data(), gdy.data());
      require_close(to_host(*gpu, gdy), dx, "activation dx in place");
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
      cpu().output_loss(c.loss, c.act, kN, kK, z.data(), labels.data(), out.data(), dz.data(),
                        kGradScale, &loss_sum);

      auto gz = to_device(*gpu, z);
      auto glabels = to_device(*gpu, labels);
      auto gout = unwritten(*gpu, z.size()), gdz = unwritten(*gpu, z.size()),
           gloss = unwritten(*gpu, 1);
      gpu->output_loss(c.loss, c.act, kN, kK, gz.data(), glabels.data(), gout.data(), gdz.data(),
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
  gpu->output_loss(dl::LossFunction::kNegativeLogLikelihood, Activation::kSoftmax, kN, kK,
                   gz.data(), glabels.data(), out.data(), dz.data(), 1.0f, loss.data());
  CHECK(std::isnan(to_host(*gpu, loss)[0]));
}

TEST_CASE("cuda: dropout masks equal the CPU's bit for bit", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kN = 10007;
  constexpr std::uint64_t kSeed = 42, kCounter = 7;
  for (auto& gpu : gpu_backends()) {
    for (const float retain : {0.8f, 0.3f, 1.0f}) {
      INFO("retain " << retain);
      const auto x = random_floats(kN, 61), dy = random_floats(kN, 62);
      auto y = unwritten_host(kN), mask = unwritten_host(kN), dx = unwritten_host(kN);
      cpu().dropout_forward(kN, retain, kSeed, kCounter, x.data(), y.data(), mask.data());
      cpu().dropout_backward(kN, mask.data(), dy.data(), dx.data());

      auto gx = to_device(*gpu, x), gdy = to_device(*gpu, dy);
      auto gy = unwritten(*gpu, kN), gmask = unwritten(*gpu, kN), gdx = unwritten(*gpu, kN);
      gpu->dropout_forward(kN, retain, kSeed, kCounter, gx.data(), gy.data(), gmask.data());
      REQUIRE(to_host(*gpu, gmask) == mask);
      REQUIRE(to_host(*gpu, gy) == y);
      gpu->dropout_backward(kN, gmask.data(), gdy.data(), gdx.data());
      REQUIRE(to_host(*gpu, gdx) == dx);
    }
  }
}

TEST_CASE("cuda: batch normalization matches the CPU", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr float kEps = 1e-5f, kDecay = 0.9f;
  for (auto& gpu : gpu_backends()) {
    for (const dl::BatchNormShape s : {dl::BatchNormShape{6, 4, 9}, dl::BatchNormShape{5, 3, 1}}) {
      INFO("n " << s.n << " channels " << s.channels << " spatial " << s.spatial);
      const std::size_t n = static_cast<std::size_t>(s.n) * s.channels * s.spatial;
      const std::size_t c = static_cast<std::size_t>(s.channels);
      auto x = random_floats(n, 71, 2.0f);
      for (float& v : x) v += 1.5f;  // a mean well away from zero
      const auto gamma = random_floats(c, 72), beta = random_floats(c, 73),
                 dy = random_floats(n, 74);
      auto running_mean = random_floats(c, 75), running_var = random_floats(c, 76);
      for (float& v : running_var) v = std::fabs(v) + 0.5f;
      auto grm = to_device(*gpu, running_mean), grv = to_device(*gpu, running_var);

      auto y = unwritten_host(n), save_mean = unwritten_host(c), save_inv_std = unwritten_host(c);
      cpu().batchnorm_forward_training(s, kEps, kDecay, x.data(), gamma.data(), beta.data(),
                                       y.data(), running_mean.data(), running_var.data(),
                                       save_mean.data(), save_inv_std.data());
      auto y_inference = unwritten_host(n);
      cpu().batchnorm_forward_inference(s, kEps, x.data(), gamma.data(), beta.data(),
                                        running_mean.data(), running_var.data(),
                                        y_inference.data());
      auto dx = unwritten_host(n), dgamma = unwritten_host(c), dbeta = unwritten_host(c);
      cpu().batchnorm_backward(s, x.data(), dy.data(), gamma.data(), save_mean.data(),
                               save_inv_std.data(), dx.data(), dgamma.data(), dbeta.data());

      auto gx = to_device(*gpu, x), ggamma = to_device(*gpu, gamma), gbeta = to_device(*gpu, beta),
           gdy = to_device(*gpu, dy);
      auto gy = unwritten(*gpu, n), gsave_mean = unwritten(*gpu, c),
           gsave_inv_std = unwritten(*gpu, c);
      gpu->batchnorm_forward_training(s, kEps, kDecay, gx.data(), ggamma.data(), gbeta.data(),
                                      gy.data(), grm.data(), grv.data(), gsave_mean.data(),
                                      gsave_inv_std.data());
      require_close(to_host(*gpu, gy), y, "batchnorm y");
      require_close(to_host(*gpu, gsave_mean), save_mean, "batchnorm save_mean");
      require_close(to_host(*gpu, gsave_inv_std), save_inv_std, "batchnorm save_inv_std");
      require_close(to_host(*gpu, grm), running_mean, "batchnorm running_mean");
      require_close(to_host(*gpu, grv), running_var, "batchnorm running_var");
      auto gy_inference = unwritten(*gpu, n);
      gpu->batchnorm_forward_inference(s, kEps, gx.data(), ggamma.data(), gbeta.data(), grm.data(),
                                       grv.data(), gy_inference.data());
      require_close(to_host(*gpu, gy_inference), y_inference, "batchnorm inference y");
      auto gdx = unwritten(*gpu, n), gdgamma = unwritten(*gpu, c), gdbeta = unwritten(*gpu, c);
      gpu->batchnorm_backward(s, gx.data(), gdy.data(), ggamma.data(), gsave_mean.data(),
                              gsave_inv_std.data(), gdx.data(), gdgamma.data(), gdbeta.data());
      require_close(to_host(*gpu, gdx), dx, "batchnorm dx");
      require_close(to_host(*gpu, gdgamma), dgamma, "batchnorm dgamma");
      require_close(to_host(*gpu, gdbeta), dbeta, "batchnorm dbeta");
    }
  }
}

TEST_CASE("cuda: every updater matches the CPU over several steps", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kN = 1001;
  constexpr int kSteps = 3;
  auto gpu = dl::test::make_gpu_backend();
  for (const dl::UpdaterType type : {dl::UpdaterType::kSgd, dl::UpdaterType::kNesterovs,
                                     dl::UpdaterType::kAdam, dl::UpdaterType::kRmsProp}) {
    INFO("updater " << static_cast<int>(type));
    dl::UpdaterHyper h;
    h.type = type;
    h.learning_rate = 0.01f;
    h.momentum = 0.9f;
    auto params = random_floats(kN, 81);
    const std::size_t state_floats = dl::updater_state_per_parameter(type) * kN;
    // RmsProp's state starts at epsilon, as DL4J's does (backend/cpu/updater.hpp).
    std::vector<float> state(state_floats, type == dl::UpdaterType::kRmsProp ? h.epsilon : 0.0f);
    auto gparams = to_device(*gpu, params);
    FloatBuffer gstate(*gpu, state_floats);
    if (state_floats > 0) gpu->upload(gstate.data(), state.data(), state_floats * sizeof(float));
    for (int step = 1; step <= kSteps; ++step) {
      h.step = step;
      const auto grads = random_floats(kN, 82 + static_cast<std::uint64_t>(step));
      cpu().updater_step(h, kN, params.data(), grads.data(), state.data());
      auto ggrads = to_device(*gpu, grads);
      gpu->updater_step(h, kN, gparams.data(), ggrads.data(), gstate.data());
    }
    require_close(to_host(*gpu, gparams), params, "updated parameters");
    if (state_floats > 0) require_close(to_host(*gpu, gstate), state, "updater state");
  }
}

TEST_CASE("cuda: freed device memory is served again from the cache", "[gpu]") {
  SKIP_WITHOUT_GPU();
  auto backend = dl::test::make_gpu_backend();
  auto* gpu = dynamic_cast<dl::gpu::CudaBackend*>(backend.get());
  REQUIRE(gpu != nullptr);
  CHECK(gpu->kind() == dl::BackendKind::kCuda);
  constexpr std::size_t kFirstRequest = 12345;
  void* a = gpu->allocate_bytes(kFirstRequest);
  gpu->free_bytes(a);
  // A smaller request that rounds up to the same size class gets the cached block back.
  const std::size_t same_class = dl::gpu::size_class(kFirstRequest) - 1;
  REQUIRE(dl::gpu::size_class(same_class) == dl::gpu::size_class(kFirstRequest));
  void* b = gpu->allocate_bytes(same_class);
  CHECK(b == a);
  gpu->free_bytes(b);
  CHECK(gpu->memory_report().find(" hits") != std::string::npos);
}

TEST_CASE("cuda: two workers on one GPU run side by side on their own streams", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 64, kIn = 96, kOut = 48;
  const auto x = random_floats(kN * kIn, 91), w = random_floats(kIn * kOut, 92),
             b = random_floats(kOut, 93);
  auto expected = unwritten_host(kN * kOut);
  cpu().dense_forward(kN, kIn, kOut, x.data(), w.data(), b.data(), expected.data());
  std::vector<std::vector<float>> results(2);
  std::vector<std::exception_ptr> failures(2);
  std::vector<std::thread> workers;
  for (int worker = 0; worker < 2; ++worker) {
    workers.emplace_back([&, worker] {
      try {
        auto gpu = dl::test::make_gpu_backend();
        auto gx = to_device(*gpu, x), gw = to_device(*gpu, w), gb = to_device(*gpu, b);
        auto gy = unwritten(*gpu, expected.size());
        constexpr int kRepeats = 20;
        for (int r = 0; r < kRepeats; ++r)
          gpu->dense_forward(kN, kIn, kOut, gx.data(), gw.data(), gb.data(), gy.data());
        results[static_cast<std::size_t>(worker)] = to_host(*gpu, gy);
      } catch (...) {
        failures[static_cast<std::size_t>(worker)] = std::current_exception();
      }
    });
  }
  for (auto& t : workers) t.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  require_close(results[0], expected, "worker 0");
  require_close(results[1], expected, "worker 1");
}

TEST_CASE("cuda: gather_samples equals the CPU's bit for bit", "[gpu]") {
  SKIP_WITHOUT_GPU();
  // MNIST-sized images (784 bytes: not a multiple of any block), every byte value, the first and
  // last samples and repeated indices.
  constexpr std::size_t kSampleBytes = 28 * 28;
  constexpr int kSamples = 301, kClasses = 10, kBatch = 133, kByteValues = 256;
  std::vector<std::uint8_t> pixels(kSamples * kSampleBytes);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>((i * 7 + i / kByteValues) % kByteValues);
  std::vector<std::int32_t> labels(kSamples);
  for (int i = 0; i < kSamples; ++i) labels[static_cast<std::size_t>(i)] = (i * 3) % kClasses;
  std::vector<std::int32_t> indices(kBatch);
  for (int i = 0; i < kBatch; ++i) indices[static_cast<std::size_t>(i)] = (i * 37) % kSamples;
  indices[0] = 0;
  indices[1] = kSamples - 1;
  indices[2] = kSamples - 1;
  indices[kBatch - 1] = 0;

  auto expected_images = unwritten_host(kBatch * kSampleBytes);
  std::vector<std::int32_t> expected_labels(kBatch, -1);
  cpu().gather_samples(pixels.data(), labels.data(), kSampleBytes, indices.data(), kBatch,
                       expected_images.data(), expected_labels.data());
  for (auto& gpu : gpu_backends()) {
    INFO(gpu->name());
    auto gpixels = to_device(*gpu, pixels);
    auto glabels = to_device(*gpu, labels), gindices = to_device(*gpu, indices);
    // One sample longer than the batch: the tail must stay unwritten (NaN).
    auto gimages = unwritten(*gpu, (kBatch + 1) * kSampleBytes);
    auto gbatch_labels = to_device(*gpu, std::vector<std::int32_t>(kBatch + 1, -1));
    gpu->gather_samples(gpixels.data(), glabels.data(), kSampleBytes, gindices.data(), kBatch,
                        gimages.data(), gbatch_labels.data());
    const auto images = to_host(*gpu, gimages);
    REQUIRE(std::memcmp(images.data(), expected_images.data(),
                        expected_images.size() * sizeof(float)) == 0);
    for (std::size_t i = expected_images.size(); i < images.size(); ++i)
      REQUIRE(std::isnan(images[i]));
    auto batch_labels = to_host(*gpu, gbatch_labels);
    CHECK(batch_labels.back() == -1);
    batch_labels.pop_back();
    CHECK(batch_labels == expected_labels);
    // No samples: nothing is written.
    gpu->gather_samples(gpixels.data(), glabels.data(), kSampleBytes, gindices.data(), 0,
                        gimages.data(), gbatch_labels.data());
    const auto unchanged = to_host(*gpu, gimages);
    CHECK(std::memcmp(unchanged.data(), images.data(), images.size() * sizeof(float)) == 0);
  }
}
