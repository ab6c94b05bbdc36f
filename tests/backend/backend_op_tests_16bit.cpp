// The products (dense, convolution) on the backends whose products run in HALF or BFLOAT16
// (for_each_16bit_backend; only the CUDA programs have them), against the CPU's float32 results
// within a bound derived from the format.
//
// The bound. A product's entry is a sum of k terms a_i b_i with |a_i|, |b_i| <= 1 (the inputs
// here are uniform in [-1, 1]). Rounding a and b to the format (unit roundoff u: 2^-11 for HALF's
// 11 significant bits, 2^-8 for BFLOAT16's 8) moves each term by at most (2u + u^2) |a_i b_i|, so
// the sum by at most (2u + u^2) k; where the result is written in the format too (cuDNN's y)
// that adds u |sum| <= u k. float32 accumulation (k 2^-24) and the CPU's own rounding stay
// below one more u for k < 2^13. Hence |got - cpu| <= (3k + 1) u (the growth factor 3k + 1),
// checked relative to 1 + |cpu| as near() does, which only loosens it. Bias gradients are sums of
// the float32 dy, as in float32. A finite-difference check would measure the rounding of the
// perturbed inputs, not the gradient, so the CPU's gradients are the reference here.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "backend/cpu/cpu_backend.hpp"

namespace dl::testing {
namespace {

double unit_roundoff(DType products) {
  return products == DType::kHalf ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
}

// The bound above for a product entry of k terms.
double product_tolerance(DType products, int k) {
  return (3.0 * k + 1.0) * unit_roundoff(products);
}

struct Results {
  std::vector<float> y, dx, dw, db;
};

TEST_CASE("op dense, 16-bit products: the CPU's float32 results within the format's bound") {
  const int n = 3, in = 4, out = 5;
  const auto x = uniform(n * in, 13), w = uniform(in * out, 14), b = uniform(out, 15);
  const auto r = uniform(n * out, 16);
  auto run = [&](Backend& be) {
    Io io(be);
    float* y = io.out(n * out);
    float* dx = io.out(n * in);
    float* dw = io.out(in * out);
    float* db = io.out(out);
    be.dense_forward(n, in, out, io.put(x), io.put(w), io.put(b), y);
    be.dense_backward(n, in, out, io.put(x), io.put(w), io.put(r), dx, dw, db);
    return Results{io.get(y, n * out), io.get(dx, n * in), io.get(dw, in * out), io.get(db, out)};
  };
  CpuBackend cpu;
  const Results want = run(cpu);
  for_each_16bit_backend([&](Backend& be, DType products) {
    const Results got = run(be);
    near("y", got.y, want.y, product_tolerance(products, in));
    near("dx", got.dx, want.dx, product_tolerance(products, out));
    near("dw", got.dw, want.dw, product_tolerance(products, n));
    near("db", got.db, want.db, kParity);
    // Not float32 either: the inputs were rounded (a backend that ignored the format would pass
    // the bound but fail this).
    CHECK(got.y != want.y);
  });
}

TEST_CASE("op convolution, 16-bit products: the CPU's float32 results within the format's bound") {
  Conv2dGeometry g;  // the float32 test's geometry: Same padding, stride 2 (explicit padding)
  g.batch = 2;
  g.in_channels = 2;
  g.in_height = 5;
  g.in_width = 4;
  g.out_channels = 3;
  g.kernel_height = g.kernel_width = 2;
  g.stride_height = g.stride_width = 2;
  g.out_height = 3;
  g.out_width = 2;
  const std::size_t xs = 2u * 2 * 5 * 4, ws = 3u * 2 * 2 * 2, ys = 2u * 3 * 3 * 2;
  const auto x = uniform(xs, 17), w = uniform(ws, 18), b = uniform(3, 19), r = uniform(ys, 20);
  auto run = [&](Backend& be) {
    Io io(be);
    float* y = io.out(ys);
    float* dx = io.out(xs);
    float* dw = io.out(ws);
    float* db = io.out(3);
    float* work = io.out(std::max<std::size_t>(be.conv2d_workspace_floats(g), 1));
    be.conv2d_forward(g, io.put(x), io.put(w), io.put(b), y, work);
    be.conv2d_backward(g, io.put(x), io.put(w), io.put(r), dx, dw, db, work);
    return Results{io.get(y, ys), io.get(dx, xs), io.get(dw, ws), io.get(db, 3)};
  };
  CpuBackend cpu;
  const Results want = run(cpu);
  const int k_y = g.in_channels * g.kernel_height * g.kernel_width;
  const int k_dx = g.out_channels * g.kernel_height * g.kernel_width;
  const int k_dw = g.batch * g.out_height * g.out_width;
  for_each_16bit_backend([&](Backend& be, DType products) {
    const Results got = run(be);
    near("y", got.y, want.y, product_tolerance(products, k_y));
    near("dx", got.dx, want.dx, product_tolerance(products, k_dx));
    near("dw", got.dw, want.dw, product_tolerance(products, k_dw));
    near("db", got.db, want.db, kParity);
    CHECK(got.y != want.y);
  });
}

}  // namespace
}  // namespace dl::testing
