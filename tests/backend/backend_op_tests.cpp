// One test per op, run on every backend of backends_under_test() through the Backend interface
// (inputs uploaded, outputs downloaded): the op against a naive double-precision reference, its
// gradient against finite differences of a scalar loss computed by the same backend's forward
// op, and parity with the CPU backend. The per-op tests of the CPU kernels' internals (thread
// slicing, guard bands) stay in the test_<op>.cpp files beside this one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/activation_reference.hpp"
#include "backend/ops/activation.hpp"
#include "backend/backend_op_test_support.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/gradient_check.hpp"
#include "config/enum_names.hpp"

namespace dl::testing {
namespace {

// ---- activations --------------------------------------------------------------------------

std::vector<float> act_forward(Backend& b, Activation a, std::size_t rows, std::size_t cols,
                               const std::vector<float>& x) {
  Io io(b);
  float* y = io.out(x.size());
  b.activation_forward(a, rows, cols, io.put(x), y);
  return io.get(y, x.size());
}

TEST_CASE("op activation: reference, gradient, parity") {
  const std::size_t rows = 3, cols = 7;
  const auto x = uniform(rows * cols, 1, -2.0f, 2.0f), r = uniform(rows * cols, 2);
  CpuBackend cpu;
  for (Activation a : all_activations()) {
    INFO("activation " << enum_name(a));
    std::vector<double> want(x.size());
    for (std::size_t row = 0; row < rows; ++row) {
      double max = -INFINITY, sum = 0;
      for (std::size_t c = 0; c < cols; ++c) max = std::max<double>(max, x[row * cols + c]);
      for (std::size_t c = 0; c < cols; ++c) sum += std::exp(x[row * cols + c] - max);
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t i = row * cols + c;
        want[i] = a == Activation::kSoftmax ? std::exp(x[i] - max) / sum
                                             : reference_activate(a, x[i]);
      }
    }
    const auto cpu_y = act_forward(cpu, a, rows, cols, x);
    for_each_backend([&](Backend& b) {
      const auto y = act_forward(b, a, rows, cols, x);
      near("forward vs reference", y, want, kReference);
      near("forward vs cpu", y, cpu_y, kParity);
      Io io(b);
      float* dx = io.out(x.size());
      b.activation_backward(a, rows, cols, io.put(x), io.put(y), io.put(r), dx);
      // In place, as a layer that writes over its input runs it (Model::plan_in_place): y over
      // x, and, where the gradient reads the output alone, the backward given that one buffer.
      float* xy = io.put(x);
      b.activation_forward(a, rows, cols, xy, xy);
      CHECK(io.get(xy, x.size()) == y);
      if (!dl::ops::activation_reads_input(a)) {
        float* dx_in_place = io.out(x.size());
        b.activation_backward(a, rows, cols, xy, xy, io.put(r), dx_in_place);
        CHECK(io.get(dx_in_place, x.size()) == io.get(dx, x.size()));
      }
      auto values = x;
      check_gradient("dx", values, io.get(dx, x.size()), [&](const std::vector<float>& v) {
        return dot(act_forward(b, a, rows, cols, v), r);
      });
    });
  }
}

// ---- pooling ------------------------------------------------------------------------------

TEST_CASE("op pooling: reference, gradient, parity") {
  Pool2dGeometry g;
  g.batch = 2;
  g.in_channels = g.out_channels = 2;
  g.in_height = 5;
  g.in_width = 4;
  g.kernel_height = g.kernel_width = 2;
  g.stride_height = 2;
  g.stride_width = 1;
  g.pad_top = 1;
  g.out_height = (5 + 2 - 2) / 2 + 1;
  g.out_width = 4 - 2 + 1;
  const std::size_t in = 2u * 2 * 5 * 4, out = 2u * 2 * g.out_height * g.out_width;
  // Distinct values 0.1 apart, so a finite-difference step never changes a max's winner.
  std::vector<float> x(in);
  for (std::size_t i = 0; i < in; ++i) x[i] = 0.1f * static_cast<float>((i * 37) % in) - 3.0f;
  const auto r = uniform(out, 3);
  CpuBackend cpu;
  for (PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    INFO("pooling " << static_cast<int>(type));
    std::vector<double> want(out);
    for (int p = 0; p < 4; ++p)
      for (int oh = 0; oh < g.out_height; ++oh)
        for (int ow = 0; ow < g.out_width; ++ow) {
          double best = -INFINITY, sum = 0;
          bool any = false;
          for (int kh = 0; kh < 2; ++kh)
            for (int kw = 0; kw < 2; ++kw) {
              const int ih = oh * 2 - 1 + kh, iw = ow + kw;
              if (ih < 0 || ih >= 5 || iw >= 4) continue;
              const double v = x[(p * 5 + ih) * 4 + iw];
              best = std::max(best, v);
              sum += v;
              any = true;
            }
          want[(p * g.out_height + oh) * g.out_width + ow] =
              type == PoolingType::kMax ? (any ? best : 0.0) : sum / 4.0;
        }
    auto forward = [&](Backend& b, const std::vector<float>& xv, std::vector<std::int32_t>* arg) {
      Io io(b);
      float* y = io.out(out);
      auto* a = io.put(std::vector<std::int32_t>(out, -2));
      b.pool2d_forward(g, type, io.put(xv), y, a);
      if (arg) *arg = io.get(a, out);
      return io.get(y, out);
    };
    const auto cpu_y = forward(cpu, x, nullptr);
    for_each_backend([&](Backend& b) {
      std::vector<std::int32_t> arg;
      const auto y = forward(b, x, &arg);
      near("forward vs reference", y, want, kReference);
      near("forward vs cpu", y, cpu_y, kParity);
      Io io(b);
      float* dx = io.out(in);
      b.pool2d_backward(g, type, io.put(x), io.put(y), io.put(r), dx, io.put(arg));
      auto values = x;
      check_gradient("dx", values, io.get(dx, in),
                     [&](const std::vector<float>& v) { return dot(forward(b, v, nullptr), r); });
    });
  }
}

// ---- batch normalization -----------------------------------------------------------------

TEST_CASE("op batch normalization (training): reference, gradient, parity") {
  // Small: on the host grid every finite-difference step runs the kernels' barriers again.
  for (int spatial : {1, 3}) {
    const BatchNormShape s{4, 3, spatial};
    const std::size_t total = 4u * 3 * spatial;
    const auto x = uniform(total, 4, -2.0f, 2.0f), r = uniform(total, 5);
    const auto gamma = uniform(3, 6, 0.5f, 1.5f), beta = uniform(3, 7);
    auto forward = [&](Backend& b, const std::vector<float>& xv, std::vector<float>* saved) {
      Io io(b);
      float* y = io.out(total);
      float* mean = io.out(3);
      float* inv_std = io.out(3);
      b.batchnorm_forward_training(s, 1e-5f, 0.9f, io.put(xv), io.put(gamma), io.put(beta), y,
                                   io.put(std::vector<float>(3, 0.0f)),
                                   io.put(std::vector<float>(3, 1.0f)), mean, inv_std);
      if (saved) {
        *saved = io.get(mean, 3);
        const auto is = io.get(inv_std, 3);
        saved->insert(saved->end(), is.begin(), is.end());
      }
      return io.get(y, total);
    };
    std::vector<double> want(total);
    for (int c = 0; c < 3; ++c) {
      double mean = 0, var = 0;
      const int count = 4 * spatial;
      for (int n = 0; n < 4; ++n)
        for (int sp = 0; sp < spatial; ++sp) mean += x[(n * 3 + c) * spatial + sp];
      mean /= count;
      for (int n = 0; n < 4; ++n)
        for (int sp = 0; sp < spatial; ++sp) {
          const double d = x[(n * 3 + c) * spatial + sp] - mean;
          var += d * d;
        }
      var /= count;
      for (int n = 0; n < 4; ++n)
        for (int sp = 0; sp < spatial; ++sp) {
          const std::size_t i = (n * 3 + c) * spatial + sp;
          want[i] = gamma[c] * (x[i] - mean) / std::sqrt(var + 1e-5) + beta[c];
        }
    }
    CpuBackend cpu;
    const auto cpu_y = forward(cpu, x, nullptr);
    for_each_backend([&](Backend& b) {
      INFO("spatial " << spatial);
      std::vector<float> saved;
      const auto y = forward(b, x, &saved);
      near("forward vs reference", y, want, 1e-4);
      near("forward vs cpu", y, cpu_y, kParity);
      Io io(b);
      float* dx = io.out(total);
      float* dgamma = io.out(3);
      float* dbeta = io.out(3);
      const std::vector<float> mean(saved.begin(), saved.begin() + 3);
      const std::vector<float> inv_std(saved.begin() + 3, saved.end());
      b.batchnorm_backward(s, io.put(x), io.put(r), io.put(gamma), io.put(mean), io.put(inv_std),
                           dx, dgamma, dbeta);
      auto values = x;
      check_gradient("dx", values, io.get(dx, total),
                     [&](const std::vector<float>& v) { return dot(forward(b, v, nullptr), r); });
      double want_dbeta0 = 0;
      for (int n = 0; n < 4; ++n)
        for (int sp = 0; sp < spatial; ++sp) want_dbeta0 += r[(n * 3) * spatial + sp];
      near("dbeta[0]", {io.get(dbeta, 3)[0]}, std::vector<double>{want_dbeta0}, kReference);
    });
  }
}

}  // namespace
}  // namespace dl::testing
