// The fused convolution, activation and pooling (Backend::conv2d_pool_forward and _backward) on
// every backend: the same bits as the three ops one after another on that backend, over
// geometries that take each CPU convolution path (direct, Winograd, columns), both poolings
// (windows that tile the input and windows that overlap), with and without an activation, and
// with and without dx (the CPU fuses backward only without it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "backend/conv2d_reference.hpp"

namespace dl::testing {
namespace {

struct Case {
  const char* name;
  ConvPool op;
  bool cpu_paths;  // LeNet's layers: the CPU's direct and Winograd paths, several tasks each
};

// Square Truncate geometries, by the convolution tests' builder (conv2d_reference.hpp).
Conv2dGeometry square_conv(int batch, int in_c, int in_hw, int out_c, int kernel, int stride) {
  return conv::truncate_geometry(
      {batch, in_c, in_hw, in_hw, out_c, kernel, kernel, stride, stride});
}

// The pooling of c's output: as many channels as c has outputs.
ConvPool conv_pool(const Conv2dGeometry& c, int window, int stride, PoolingType type) {
  ConvPool op;
  op.conv = c;
  op.pool = conv::truncate_geometry({c.batch, c.out_channels, c.out_height, c.out_width,
                                     c.out_channels, window, window, stride, stride});
  op.pooling = type;
  return op;
}

std::vector<Case> cases() {
  return {
      {"LeNet's first layer (direct), max 2x2",
       conv_pool(square_conv(9, 1, 28, 20, 5, 1), 2, 2, PoolingType::kMax), true},
      {"LeNet's second layer (Winograd), max 2x2",
       conv_pool(square_conv(9, 20, 12, 50, 5, 1), 2, 2, PoolingType::kMax), true},
      {"stride 2 (columns), average 2x2",
       conv_pool(square_conv(5, 3, 11, 6, 3, 2), 2, 2, PoolingType::kAvg), false},
      {"overlapping max windows 3x3 stride 2",
       conv_pool(square_conv(6, 2, 13, 4, 3, 1), 3, 2, PoolingType::kMax), false},
  };
}

struct Results {
  std::vector<float> y, pooled, dy, dx, dw, db;
  std::vector<std::int32_t> argmax;
};

// Forward and backward through the fused ops, or through the three ops one after another.
Results run(Backend& b, const ConvPool& op, bool fused, bool with_dx) {
  const Conv2dGeometry& c = op.conv;
  const std::size_t xs = conv::x_size(c), ys = conv::y_size(c), ps = conv::y_size(op.pool);
  const std::size_t ws = conv::w_size(c);
  Io io(b);
  const float* x = io.put(uniform(xs, 31));
  const float* w = io.put(uniform(ws, 32));
  const float* bias = io.put(uniform(c.out_channels, 33));
  const float* dpooled = io.put(uniform(ps, 34));
  float* y = io.out(ys);
  float* pooled = io.out(ps);
  float* dy = io.out(ys);
  float* dx = with_dx ? io.out(xs) : nullptr;
  float* dw = io.out(ws);
  float* db = io.out(c.out_channels);
  float* work = io.out(std::max<std::size_t>(b.conv2d_workspace_floats(c), 1));
  std::int32_t* argmax = io.put(std::vector<std::int32_t>(ps, -7));
  const std::size_t per_sample = ys / c.batch;
  if (fused) {
    b.conv2d_pool_forward(op, x, w, bias, y, pooled, argmax, work);
    b.conv2d_pool_backward(op, x, w, y, pooled, dpooled, argmax, dy, dx, dw, db, work);
  } else {
    b.conv2d_forward(c, x, w, bias, y, work);
    if (op.activation != Activation::kIdentity)
      b.activation_forward(op.activation, c.batch, per_sample, y, y);
    b.pool2d_forward(op.pool, op.pooling, y, pooled, argmax);
    b.pool2d_backward(op.pool, op.pooling, y, pooled, dpooled, dy, argmax);
    if (op.activation != Activation::kIdentity)
      b.activation_backward(op.activation, c.batch, per_sample, nullptr, y, dy, dy);
    b.conv2d_backward(c, x, w, dy, dx, dw, db, work);
  }
  Results r{io.get(y, ys),  io.get(pooled, ps),         io.get(dy, ys),    {},
            io.get(dw, ws), io.get(db, c.out_channels), io.get(argmax, ps)};
  if (with_dx) r.dx = io.get(dx, xs);
  return r;
}

TEST_CASE("op convolution + activation + pooling, fused: the unfused ops' bits") {
  const Activation activation = GENERATE(Activation::kIdentity, Activation::kRelu);
  const bool with_dx = GENERATE(false, true);
  for (Case c : cases()) {
    c.op.activation = activation;
    INFO(c.name << (activation == Activation::kRelu ? ", relu" : ", identity")
                << (with_dx ? ", with dx" : ", no dx"));
    for_each_backend([&](Backend& b) {
      // The CPU fuses per task, by path; other backends run the Backend's default (the ops in
      // turn), checked on the small cases: the host grid's emulated launches of LeNet's layers,
      // five launch-limit sets and four variants, overran ThreadSanitizer's fiber support.
      if (c.cpu_paths && b.name() != "cpu") return;
      const Results fused = run(b, c.op, true, with_dx), apart = run(b, c.op, false, with_dx);
      if (b.conv2d_pool_writes_output(c.op)) {
        CHECK(fused.y == apart.y);
      } else {
        // Left as Io::out made it: each task's outputs stayed in its thread's buffer.
        CHECK(std::all_of(fused.y.begin(), fused.y.end(), [](float f) { return std::isnan(f); }));
      }
      CHECK(fused.pooled == apart.pooled);
      CHECK(fused.argmax == apart.argmax);
      if (with_dx) CHECK(fused.dy == apart.dy);  // without dx, the CPU keeps dy per task
      CHECK(fused.dx == apart.dx);
      CHECK(fused.dw == apart.dw);
      CHECK(fused.db == apart.db);
      // Not a vacuous match: every output was written (no NaN left from Io::out).
      for (const auto* v : {&fused.pooled, &fused.dw, &fused.db}) {
        CHECK(std::none_of(v->begin(), v->end(), [](float f) { return std::isnan(f); }));
      }
    });
  }
}

TEST_CASE(
    "op convolution + pooling, fused: a pooling that does not read the convolution's "
    "output is refused") {
  ConvPool op = conv_pool(square_conv(2, 1, 8, 3, 3, 1), 2, 2, PoolingType::kMax);
  op.pool.in_channels = op.pool.out_channels = 4;
  for_each_backend([&](Backend& b) {
    CHECK_THROWS(
        b.conv2d_pool_forward(op, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
  });
}

}  // namespace
}  // namespace dl::testing
