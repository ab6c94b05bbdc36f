// One test per op over backends, continued (see backend_op_tests.cpp): the output layer, dropout,
// dense, convolution, the flat-buffer ops and the updaters.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/gradient_check.hpp"
#include "backend/update_terms_fixture.hpp"

namespace dl::testing {
namespace {

// ---- output layer -------------------------------------------------------------------------

TEST_CASE(
    "op output loss (softmax + MCXENT, label-smoothed too, sigmoid + NLL, MSE): reference, "
    "gradient, parity") {
  const int n = 3, k = 5;
  const auto z = uniform(static_cast<std::size_t>(n) * k, 10, -2.0f, 2.0f);
  const std::vector<std::int32_t> labels = {1, 4, 0};
  const float grad_scale = 0.5f;
  struct Case {
    LossFunction loss;
    Activation act;
    float smoothing = 0.0f;
  };
  CpuBackend cpu;
  for (Case c : {Case{LossFunction::kMcxent, Activation::kSoftmax},
                 Case{LossFunction::kNegativeLogLikelihood, Activation::kSoftmax, 0.2f},
                 Case{LossFunction::kNegativeLogLikelihood, Activation::kSigmoid},
                 Case{LossFunction::kMse, Activation::kIdentity}}) {
    INFO("loss " << static_cast<int>(c.loss) << ", activation " << static_cast<int>(c.act)
                 << ", label smoothing " << c.smoothing);
    // DL4J's definitions (backend.hpp): -sum y log(a), or sum (a - y)^2 / k, y one-hot, or for
    // softmax the smoothed y = (1 - e) one-hot + e / k.
    double want = 0;
    for (int r = 0; r < n; ++r) {
      double max = -INFINITY, sum = 0;
      for (int j = 0; j < k; ++j) max = std::max<double>(max, z[r * k + j]);
      for (int j = 0; j < k; ++j) sum += std::exp(z[r * k + j] - max);
      for (int j = 0; j < k; ++j) {
        const double zj = z[r * k + j];
        const double a = c.act == Activation::kSoftmax   ? std::exp(zj - max) / sum
                         : c.act == Activation::kSigmoid ? 1 / (1 + std::exp(-zj))
                                                         : zj;
        const double y = (j == labels[r] ? 1.0 - c.smoothing : 0.0) + double(c.smoothing) / k;
        want += c.loss == LossFunction::kMse ? (a - y) * (a - y) / k : -y * std::log(a);
      }
    }
    auto loss = [&](Backend& b, const std::vector<float>& zv, std::vector<float>* dz) {
      Io io(b);
      float* out = io.out(zv.size());
      float* d = io.out(zv.size());
      float* sum = io.out(1);
      b.output_loss({c.loss, c.act, c.smoothing}, n, k, io.put(zv), io.put(labels), out, d,
                    grad_scale, sum);
      if (dz) *dz = io.get(d, zv.size());
      return static_cast<double>(io.get(sum, 1)[0]);
    };
    std::vector<float> cpu_dz;
    const double cpu_loss = loss(cpu, z, &cpu_dz);
    for_each_backend([&](Backend& b) {
      std::vector<float> dz;
      const double got = loss(b, z, &dz);
      near("loss vs reference", {static_cast<float>(got)}, std::vector<double>{want}, kReference);
      near("loss vs cpu", {static_cast<float>(got)}, std::vector<double>{cpu_loss}, kParity);
      near("dz vs cpu", dz, cpu_dz, kParity);
      for (float& v : dz) v /= grad_scale;  // dz = grad_scale * d(loss sum)/dz
      auto values = z;
      check_gradient("dz", values, dz,
                     [&](const std::vector<float>& v) { return loss(b, v, nullptr); });
    });
  }
}

TEST_CASE("op count_correct: rows whose first largest output is the label, on every backend") {
  const int n = 6, k = 4;
  const std::vector<float> out = {0.1f, 0.7f, 0.1f,  0.1f,   // predicts 1
                                  0.4f, 0.4f, 0.1f,  0.1f,   // a tie: predicts 0
                                  0.0f, 0.0f, 0.0f,  1.0f,   // predicts 3
                                  0.3f, 0.2f, 0.25f, 0.25f,  // predicts 0
                                  0.1f, 0.2f, 0.6f,  0.1f,   // predicts 2
                                  0.5f, 0.1f, 0.2f,  0.2f};  // predicts 0
  const std::vector<std::int32_t> labels = {1, 1, 3, 2, 2, 0};
  for_each_backend([&](Backend& b) {
    Io io(b);
    float* count = io.out(1);
    b.count_correct(n, k, io.put(out), io.put(labels), count);
    CHECK(io.get(count, 1)[0] == 4.0f);
  });
}

// ---- dropout ------------------------------------------------------------------------------

TEST_CASE("op dropout: masks are 0 or 1/retain, keep about retain, equal the CPU's bits") {
  const std::size_t n = 4000;
  const auto x = uniform(n, 11), dy = uniform(n, 12);
  const float retain = 0.75f;
  auto run = [&](Backend& b, std::vector<float>& y, std::vector<float>& mask,
                 std::vector<float>& dx) {
    Io io(b);
    float* yd = io.out(n);
    float* md = io.out(n);
    float* dxd = io.out(n);
    b.dropout_forward(n, retain, 99, 7, io.put(x), yd, md);
    b.dropout_backward(n, md, io.put(dy), dxd);
    y = io.get(yd, n);
    mask = io.get(md, n);
    dx = io.get(dxd, n);
  };
  CpuBackend cpu;
  std::vector<float> cy, cmask, cdx;
  run(cpu, cy, cmask, cdx);
  for_each_backend([&](Backend& b) {
    std::vector<float> y, mask, dx;
    run(b, y, mask, dx);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE((mask[i] == 0.0f || mask[i] == 1.0f / retain));
      kept += mask[i] != 0.0f;
      REQUIRE(y[i] == x[i] * mask[i]);
      REQUIRE(dx[i] == dy[i] * mask[i]);
    }
    CHECK(std::fabs(static_cast<double>(kept) / n - retain) < 0.03);
    CHECK(mask == cmask);
    CHECK(y == cy);
    CHECK(dx == cdx);
  });
}

// ---- dense and convolution -----------------------------------------------------------------

TEST_CASE("op dense: reference, gradient, parity") {
  const int n = 3, in = 4, out = 5;
  const auto x = uniform(n * in, 13), w = uniform(in * out, 14), b0 = uniform(out, 15);
  const auto r = uniform(n * out, 16);
  auto forward = [&](Backend& b, const std::vector<float>& xv, const std::vector<float>& wv,
                     const std::vector<float>& bv) {
    Io io(b);
    float* y = io.out(n * out);
    b.dense_forward(n, in, out, io.put(xv), io.put(wv), io.put(bv), y);
    return io.get(y, n * out);
  };
  std::vector<double> want(n * out);
  for (int s = 0; s < n; ++s)
    for (int o = 0; o < out; ++o) {
      double v = b0[o];
      for (int i = 0; i < in; ++i) v += double(x[s * in + i]) * w[i * out + o];
      want[s * out + o] = v;
    }
  CpuBackend cpu;
  const auto cpu_y = forward(cpu, x, w, b0);
  for_each_backend([&](Backend& b) {
    const auto y = forward(b, x, w, b0);
    near("forward vs reference", y, want, kReference);
    near("forward vs cpu", y, cpu_y, kParity);
    Io io(b);
    float* dx = io.out(n * in);
    float* dw = io.out(in * out);
    float* db = io.out(out);
    b.dense_backward(n, in, out, io.put(x), io.put(w), io.put(r), dx, dw, db);
    auto xs = x, ws = w, bs = b0;
    check_gradient("dx", xs, io.get(dx, n * in),
                   [&](const std::vector<float>& v) { return dot(forward(b, v, w, b0), r); });
    check_gradient("dw", ws, io.get(dw, in * out),
                   [&](const std::vector<float>& v) { return dot(forward(b, x, v, b0), r); });
    check_gradient("db", bs, io.get(db, out),
                   [&](const std::vector<float>& v) { return dot(forward(b, x, w, v), r); });
  });
}

// Same padding with stride 2 (the CPU's columns path), and stride 1 with padding on all sides over
// one input channel (a first layer: the CPU's direct path).
TEST_CASE("op convolution (Same padding, stride 2; stride 1, padding): gradient, parity") {
  Conv2dGeometry g;
  g.batch = 2;
  g.in_channels = 2;
  g.in_height = 5;
  g.in_width = 4;
  g.out_channels = 3;
  g.kernel_height = g.kernel_width = 2;
  g.stride_height = g.stride_width = 2;
  g.out_height = 3;  // ceil(5 / 2), ceil(4 / 2); padding (3-1)*2+2-5 = 1 after, 0 before
  g.out_width = 2;
  if (GENERATE(false, true)) {
    g.in_channels = 1;
    g.stride_height = g.stride_width = 1;
    g.kernel_height = 3;
    g.pad_top = g.pad_left = 1;
    g.out_height = 5;  // padding 1 on every side
    g.out_width = 5;
  }
  const std::size_t xs = std::size_t{2} * g.in_channels * 5 * 4;
  const std::size_t ws = std::size_t{3} * g.in_channels * g.kernel_height * 2;
  const std::size_t ys = std::size_t{2} * 3 * g.out_height * g.out_width;
  const auto x = uniform(xs, 17), w = uniform(ws, 18), bias = uniform(3, 19), r = uniform(ys, 20);
  auto forward = [&](Backend& b, const std::vector<float>& xv, const std::vector<float>& wv,
                     const std::vector<float>& bv) {
    Io io(b);
    float* y = io.out(ys);
    float* work = io.out(std::max<std::size_t>(b.conv2d_workspace_floats(g), 1));
    b.conv2d_forward(g, io.put(xv), io.put(wv), io.put(bv), y, work);
    return io.get(y, ys);
  };
  CpuBackend cpu;
  const auto cpu_y = forward(cpu, x, w, bias);
  for_each_backend([&](Backend& b) {
    near("forward vs cpu", forward(b, x, w, bias), cpu_y, kParity);
    Io io(b);
    float* dx = io.out(xs);
    float* dw = io.out(ws);
    float* db = io.out(3);
    float* work = io.out(std::max<std::size_t>(b.conv2d_workspace_floats(g), 1));
    b.conv2d_backward(g, io.put(x), io.put(w), io.put(r), dx, dw, db, work);
    auto xv = x, wv = w, bv = bias;
    check_gradient("dx", xv, io.get(dx, xs),
                   [&](const std::vector<float>& v) { return dot(forward(b, v, w, bias), r); });
    check_gradient("dw", wv, io.get(dw, ws),
                   [&](const std::vector<float>& v) { return dot(forward(b, x, v, bias), r); });
    check_gradient("db", bv, io.get(db, 3),
                   [&](const std::vector<float>& v) { return dot(forward(b, x, w, v), r); });
  });
}

// ---- flat buffers and updaters -------------------------------------------------------------

TEST_CASE("op flat-buffer arithmetic and updaters: reference, parity") {
  const std::size_t n = 257;
  const auto x = uniform(n, 21), y0 = uniform(n, 22);
  for_each_backend([&](Backend& b) {
    Io io(b);
    float* y = io.put(y0);
    b.axpy(n, 0.5f, io.put(x), y);
    b.scale(n, -2.0f, y);
    std::vector<double> want(n);
    double squares = 0;
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = -2.0 * (y0[i] + 0.5 * x[i]);
      squares += double(x[i]) * x[i];
    }
    near("axpy then scale", io.get(y, n), want, kReference);
    float* sum = io.out(1);
    b.sum_of_squares(n, io.put(x), sum);
    near("sum of squares", io.get(sum, 1), std::vector<double>{squares}, kReference);
    CHECK(b.all_finite(n, io.put(x)));
    auto bad = x;
    bad[100] = NAN;
    CHECK_FALSE(b.all_finite(n, io.put(bad)));
  });
  for (UpdaterType type : {UpdaterType::kSgd, UpdaterType::kNesterovs, UpdaterType::kAdam,
                           UpdaterType::kRmsProp, UpdaterType::kAdamW}) {
    INFO("updater " << static_cast<int>(type));
    UpdaterHyper h;
    h.type = type;
    h.learning_rate = 0.05f;
    h.momentum = 0.9f;
    h.step = 4;
    const auto state0 = uniform(2 * n, 23, 0.0f, 1.0f);
    const UpdateTermRanges terms = mixed_update_terms(n, 5);
    auto step = [&](Backend& b, std::vector<float>& state) {
      Io io(b);
      float* p = io.put(x);
      float* s = io.put(state);
      b.updater_step(h, n, p, io.put(y0), s, terms);
      state = io.get(s, state.size());
      return io.get(p, n);
    };
    CpuBackend cpu;
    auto cpu_state = state0;
    const auto cpu_p = step(cpu, cpu_state);
    for_each_backend([&](Backend& b) {
      auto state = state0;
      near("parameters vs cpu", step(b, state), cpu_p, kParity);
      near("state vs cpu", state, cpu_state, kParity);
    });
  }
}

// A channel concatenation's copy: `rows` strided runs land in a strided destination, and the
// floats between the runs are left as they were.
TEST_CASE("op copy_rows: strided runs, bits equal, gaps untouched") {
  const std::size_t rows = 5, row_floats = 7, src_stride = 9, dst_stride = 12;
  const auto src = uniform(rows * src_stride, 31);
  const auto dst0 = uniform(rows * dst_stride, 32);
  std::vector<float> want = dst0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < row_floats; ++c) want[r * dst_stride + 2 + c] = src[r * src_stride + c];
  for_each_backend([&](Backend& b) {
    Io io(b);
    float* dst = io.put(dst0);
    b.copy_rows(rows, row_floats, io.put(src), src_stride, dst + 2, dst_stride);
    CHECK(io.get(dst, want.size()) == want);
  });
}

}  // namespace
}  // namespace dl::testing
