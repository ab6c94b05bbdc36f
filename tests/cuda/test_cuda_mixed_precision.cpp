// Mixed precision (Config::dtype HALF and BFLOAT16) in the CUDA backend (the casts:
// test_cuda_half_casts.cpp).
//
//  - Convolution and dense, forward and backward, against the CPU backend's float32 result,
//    within an error bound derived from the 16-bit format (below).
//
// The [gpu] cases return at once, counted as skipped, when no CUDA device is visible.
//
// Error bound. Let u be the format's unit roundoff (half 2^-11, bfloat16 2^-8) and m its
// smallest normal value (half 2^-14, bfloat16 2^-126). Rounding v to the format gives
// v(1 + d) + e with |d| <= u and |e| <= u m (e only below m, where the spacing is fixed), so
// |round(v) - v| <= u (|v| + m). A product of two rounded values is then within
// (2u + u^2)(|x| + m)(|w| + m) of x w. An output element sums K such products (K: the reduction
// length) in float32; with unit roundoff u32 (2^-24, doubled to 2^-23 to allow the truncating
// accumulation of tensor cores) the sum adds at most gamma_K = K u32 / (1 - K u32) times the sum
// of magnitudes, on the GPU and again in the CPU's float32 reference. So, with
//   M = sum over the K terms of (|x| + m)(|w| + m)   (+ |b| where a bias is added),
// computed exactly like the op itself by the CPU backend on those magnitudes,
//   |gpu - cpu| <= (2u + u^2 + 2 gamma_{K+1}) M.
// Where cuDNN writes its result in the 16-bit format (conv y, dx, dw) one more rounding adds
// u ((1 + u)^2 M + m). M carries the reduction length: it is about K times the mean |x w|.
// The bound holds for GEMM-based algorithms, the only ones the backend takes in 16-bit.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "cuda_backend.hpp"
#include "gpu_test_support.hpp"
#include "half_format_traits.hpp"
#include "ops/precision_cast.hpp"

namespace {

using dl::Backend;
using dl::Conv2dGeometry;
using dl::DType;
using dl::FloatBuffer;
using dl::gpu::HalfFormat;
using dl::test::as_cuda;
using dl::test::cpu;
using dl::test::FormatTraits;
using dl::test::kBFloat16Traits;
using dl::test::kHalfTraits;
using dl::test::random_floats;
using dl::test::require_close;
using dl::test::to_device;
using dl::test::to_host;
using dl::test::unwritten;
using dl::test::unwritten_host;

using dl::test::kTightBlock;
using dl::test::kTightGrid;

// float32's unit roundoff, doubled: see the bound at the top.
const double kAccumulationRoundoff = std::ldexp(1.0, -23);

// ---- the error bound ----------------------------------------------------------------------------

// The bound at the top of this file for every element, from M (`magnitudes`) and the reduction
// length; `rounded_output`: cuDNN wrote the result in the 16-bit format.
std::vector<double> error_bound(const std::vector<float>& magnitudes, std::size_t reduction,
                                const FormatTraits& t, bool rounded_output) {
  const double u = t.unit_roundoff;
  const double terms = static_cast<double>(reduction + 1);
  const double gamma = terms * kAccumulationRoundoff / (1.0 - terms * kAccumulationRoundoff);
  std::vector<double> bound(magnitudes.size());
  for (std::size_t i = 0; i < magnitudes.size(); ++i) {
    const double m = magnitudes[i];
    bound[i] = (2.0 * u + u * u + 2.0 * gamma) * m;
    if (rounded_output) bound[i] += u * ((1.0 + u) * (1.0 + u) * m + t.min_normal);
  }
  return bound;
}

void require_within(const std::vector<float>& gpu, const std::vector<float>& cpu,
                    const std::vector<double>& bound, const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  REQUIRE(bound.size() == cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double error = std::fabs(double{gpu[i]} - double{cpu[i]});
    if (!(error <= bound[i])) {
      INFO(what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i] << ", bound " << bound[i]);
      REQUIRE(error <= bound[i]);
    }
  }
}

// |v| + m for every element: the magnitudes M is computed from.
std::vector<float> magnitudes_of(const std::vector<float>& v, const FormatTraits& t) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = std::fabs(v[i]) + static_cast<float>(t.min_normal);
  return out;
}
std::vector<float> absolute(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

// ---- the ops ------------------------------------------------------------------------------------

Conv2dGeometry geometry(int batch, int in_c, int in_hw, int out_c, int kernel, int stride, int pad,
                        int out_hw) {
  Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = in_c;
  g.in_height = g.in_width = in_hw;
  g.out_channels = out_c;
  g.out_height = g.out_width = out_hw;
  g.kernel_height = g.kernel_width = kernel;
  g.stride_height = g.stride_width = stride;
  g.pad_top = g.pad_left = pad;
  return g;
}

std::size_t input_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels * g.in_height * g.in_width;
}
std::size_t output_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}
std::size_t weight_size(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height *
         g.kernel_width;
}

struct ConvResult {
  std::vector<float> y, dx, dw, db;
};

ConvResult cpu_conv(const Conv2dGeometry& g, const std::vector<float>& x,
                    const std::vector<float>& w, const std::vector<float>& b,
                    const std::vector<float>& dy) {
  ConvResult r{unwritten_host(output_size(g)), unwritten_host(input_size(g)),
               unwritten_host(weight_size(g)),
               unwritten_host(static_cast<std::size_t>(g.out_channels))};
  std::vector<float> ws(cpu().conv2d_workspace_floats(g));
  cpu().conv2d_forward(g, x.data(), w.data(), b.data(), r.y.data(), ws.data());
  cpu().conv2d_backward(g, x.data(), w.data(), dy.data(), r.dx.data(), r.dw.data(), r.db.data(),
                        ws.data());
  return r;
}

// Conv forward and backward in 16-bit on `gpu` (workspace sized for `bound`, same shape, batch
// >= run.batch) against the CPU's float32 result.
void check_conv2d(Backend& gpu, const FormatTraits& t, const Conv2dGeometry& bound,
                  const Conv2dGeometry& run) {
  const auto x = random_floats(input_size(run), 111);
  const auto w = random_floats(weight_size(run), 112, 0.3f);
  const auto b = random_floats(static_cast<std::size_t>(run.out_channels), 113);
  const auto dy = random_floats(output_size(run), 114);
  const ConvResult expected = cpu_conv(run, x, w, b, dy);
  const ConvResult magnitude =
      cpu_conv(run, magnitudes_of(x, t), magnitudes_of(w, t), absolute(b), magnitudes_of(dy, t));

  FloatBuffer ws(gpu, gpu.conv2d_workspace_floats(bound));
  auto gx = to_device(gpu, x), gw = to_device(gpu, w), gb = to_device(gpu, b),
       gdy = to_device(gpu, dy);
  auto gy = unwritten(gpu, expected.y.size());
  gpu.conv2d_forward(run, gx.data(), gw.data(), gb.data(), gy.data(), ws.data());
  constexpr bool kRoundedOutput = true;
  const std::size_t forward_terms =
      static_cast<std::size_t>(run.in_channels) * run.kernel_height * run.kernel_width;
  require_within(to_host(gpu, gy), expected.y,
                 error_bound(magnitude.y, forward_terms, t, kRoundedOutput), "conv2d y");

  auto gdx = unwritten(gpu, expected.dx.size()), gdw = unwritten(gpu, expected.dw.size()),
       gdb = unwritten(gpu, expected.db.size());
  gpu.conv2d_backward(run, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(), gdb.data(),
                      ws.data());
  const std::size_t data_terms =
      static_cast<std::size_t>(run.out_channels) * run.kernel_height * run.kernel_width;
  const std::size_t filter_terms =
      static_cast<std::size_t>(run.batch) * run.out_height * run.out_width;
  require_within(to_host(gpu, gdx), expected.dx,
                 error_bound(magnitude.dx, data_terms, t, kRoundedOutput), "conv2d dx");
  const auto dw_bound = error_bound(magnitude.dw, filter_terms, t, kRoundedOutput);
  require_within(to_host(gpu, gdw), expected.dw, dw_bound, "conv2d dw");
  // The bias gradient stays float32 (column sums of the float32 dy).
  require_close(to_host(gpu, gdb), expected.db, "conv2d db");

  auto gdw2 = unwritten(gpu, expected.dw.size()), gdb2 = unwritten(gpu, expected.db.size());
  gpu.conv2d_backward(run, gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(), gdb2.data(),
                      ws.data());
  require_within(to_host(gpu, gdw2), expected.dw, dw_bound, "conv2d dw without dx");
}

struct DenseResult {
  std::vector<float> y, dx, dw, db;
};

DenseResult cpu_dense(int n, int in, int out, const std::vector<float>& x,
                      const std::vector<float>& w, const std::vector<float>& b,
                      const std::vector<float>& dy) {
  DenseResult r{unwritten_host(static_cast<std::size_t>(n) * out),
                unwritten_host(static_cast<std::size_t>(n) * in),
                unwritten_host(static_cast<std::size_t>(in) * out),
                unwritten_host(static_cast<std::size_t>(out))};
  cpu().dense_forward(n, in, out, x.data(), w.data(), b.data(), r.y.data());
  cpu().dense_backward(n, in, out, x.data(), w.data(), dy.data(), r.dx.data(), r.dw.data(),
                       r.db.data());
  return r;
}

void check_dense(Backend& gpu, const FormatTraits& t, int n, int in, int out) {
  const auto x = random_floats(static_cast<std::size_t>(n) * in, 121);
  const auto w = random_floats(static_cast<std::size_t>(in) * out, 122, 0.3f);
  const auto b = random_floats(static_cast<std::size_t>(out), 123);
  const auto dy = random_floats(static_cast<std::size_t>(n) * out, 124);
  const DenseResult expected = cpu_dense(n, in, out, x, w, b, dy);
  const DenseResult magnitude = cpu_dense(n, in, out, magnitudes_of(x, t), magnitudes_of(w, t),
                                          absolute(b), magnitudes_of(dy, t));

  auto gx = to_device(gpu, x), gw = to_device(gpu, w), gb = to_device(gpu, b),
       gdy = to_device(gpu, dy);
  auto gy = unwritten(gpu, expected.y.size());
  gpu.dense_forward(n, in, out, gx.data(), gw.data(), gb.data(), gy.data());
  constexpr bool kFloatOutput = false;  // cublasGemmEx writes float32
  require_within(to_host(gpu, gy), expected.y,
                 error_bound(magnitude.y, static_cast<std::size_t>(in), t, kFloatOutput),
                 "dense y");

  auto gdx = unwritten(gpu, expected.dx.size()), gdw = unwritten(gpu, expected.dw.size()),
       gdb = unwritten(gpu, expected.db.size());
  gpu.dense_backward(n, in, out, gx.data(), gw.data(), gdy.data(), gdx.data(), gdw.data(),
                     gdb.data());
  require_within(to_host(gpu, gdx), expected.dx,
                 error_bound(magnitude.dx, static_cast<std::size_t>(out), t, kFloatOutput),
                 "dense dx");
  const auto dw_bound = error_bound(magnitude.dw, static_cast<std::size_t>(n), t, kFloatOutput);
  require_within(to_host(gpu, gdw), expected.dw, dw_bound, "dense dw");
  // Column sums in double (ops/bias_sums.hpp), rounded once: within float rounding of the CPU's.
  require_close(to_host(gpu, gdb), expected.db, "dense db");

  auto gdw2 = unwritten(gpu, expected.dw.size());
  gpu.dense_backward(n, in, out, gx.data(), gw.data(), gdy.data(), nullptr, gdw2.data(),
                     gdb.data());
  require_within(to_host(gpu, gdw2), expected.dw, dw_bound, "dense dw without dx");
}

}  // namespace

// ---- ops against the CPU -----------------------------------------------------------------------

TEST_CASE("mixed precision: the backend's name shows the precision", "[gpu]") {
  SKIP_WITHOUT_GPU();
  CHECK(dl::test::make_gpu_backend(DType::kFloat)->name() == "cuda:0");
  CHECK(dl::test::make_gpu_backend(DType::kHalf)->name() == "cuda:0 (HALF)");
  auto bf16 = dl::test::make_gpu_backend(DType::kBFloat16);
  CHECK(bf16->name() == "cuda:0 (BFLOAT16)");
  CHECK(as_cuda(*bf16).half_format() == HalfFormat::kBFloat16);
  CHECK_FALSE(as_cuda(*dl::test::make_gpu_backend(DType::kFloat)).half_format().has_value());
}

TEST_CASE("mixed precision: conv2d in HALF and BFLOAT16 is within the format's error bound",
          "[gpu]") {
  SKIP_WITHOUT_GPU();
  for (const FormatTraits* t : {&kHalfTraits, &kBFloat16Traits}) {
    INFO("format " << t->name);
    auto gpu = dl::test::make_gpu_backend(t->dtype);
    struct Case {
      const char* what;
      Conv2dGeometry bound, run;
    };
    const auto lenet = geometry(4, 1, 12, 4, 5, 1, 0, 8);
    const auto wide = geometry(4, 16, 10, 32, 3, 1, 1, 10);
    const auto strided = geometry(3, 3, 9, 5, 3, 2, 1, 5);
    const auto same = geometry(2, 2, 8, 3, 4, 1, 1, 8);
    const auto same_bound = geometry(6, 2, 8, 3, 4, 1, 1, 8);
    auto same_last = same_bound;
    same_last.batch = 1;
    for (const Case& c :
         {Case{"LeNet-like, no padding", lenet, lenet},
          Case{"channels that suit tensor cores, symmetric padding", wide, wide},
          Case{"stride 2, symmetric padding", strided, strided},
          Case{"Same mode, even kernel: explicit padding", same, same},
          Case{"a smaller batch than the workspace was sized for", same_bound, same_last}}) {
      INFO(c.what);
      check_conv2d(*gpu, *t, c.bound, c.run);
    }
  }
}

TEST_CASE("mixed precision: dense in HALF and BFLOAT16 is within the format's error bound",
          "[gpu]") {
  SKIP_WITHOUT_GPU();
  for (const FormatTraits* t : {&kHalfTraits, &kBFloat16Traits}) {
    INFO("format " << t->name);
    for (const int max_grid : {4096, kTightGrid}) {
      auto gpu = dl::test::make_gpu_backend(max_grid, max_grid == kTightGrid ? kTightBlock : 256,
                                            t->dtype);
      check_dense(*gpu, *t, 7, 13, 5);      // odd sizes: unaligned leading dimensions
      check_dense(*gpu, *t, 64, 256, 120);  // LeNet's first dense layer shape
      check_dense(*gpu, *t, 3, 9, 4);       // smaller again: the scratch is reused
    }
  }
}

TEST_CASE("mixed precision: after the first dense step nothing more is allocated", "[gpu]") {
  SKIP_WITHOUT_GPU();
  constexpr int kN = 32, kIn = 100, kOut = 10;
  auto backend = dl::test::make_gpu_backend(DType::kHalf);
  auto& gpu = as_cuda(*backend);
  auto x = to_device(gpu, random_floats(kN * kIn, 131)),
       w = to_device(gpu, random_floats(kIn * kOut, 132)),
       b = to_device(gpu, random_floats(kOut, 133)),
       dy = to_device(gpu, random_floats(kN * kOut, 134));
  FloatBuffer y(gpu, kN * kOut), dx(gpu, kN * kIn), dw(gpu, kIn * kOut), db(gpu, kOut);
  const auto step = [&](int n) {
    gpu.dense_forward(n, kIn, kOut, x.data(), w.data(), b.data(), y.data());
    gpu.dense_backward(n, kIn, kOut, x.data(), w.data(), dy.data(), dx.data(), dw.data(),
                       db.data());
  };
  step(kN);
  gpu.synchronize();
  const std::string after_first = gpu.memory_report();
  step(kN);
  step(kN / 2);  // a smaller last minibatch fits the same scratch
  gpu.synchronize();
  CHECK(gpu.memory_report() == after_first);
}
