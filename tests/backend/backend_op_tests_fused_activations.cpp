// The activations fused into the op before them, on every backend. The residual sum's last term
// and its activation (Backend::add_activation_forward), and its gradient with one more term
// (add_activation_backward): the bits of axpy and the activation one after the other. Batch
// normalization fused with the activation after it (Backend::batchnorm_activation_*): the same bits
// as batch normalization and the activation one after another on that backend, forward (training
// and inference) and, for the activations whose gradient is a selection (ReLU, leaky ReLU),
// backward, within float rounding for the others; a finite-difference check of the fused op's dx
// for the smooth activations; and parity with the CPU.
#include <algorithm>
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/gradient_check.hpp"

namespace dl::testing {
namespace {

constexpr float kEps = 1e-5f, kDecay = 0.9f;
// Where the activation's gradient ends in a product, the compiler may fuse it with the next add
// (ops::batchnorm_gradient_is_exact): a rounding or two of float apart.
constexpr double kFloatContraction = 1e-6;

struct Inputs {
  BatchNormShape s;
  std::vector<float> x, dy, gamma, beta;
  std::size_t total() const { return static_cast<std::size_t>(s.n) * s.channels * s.spatial; }
  std::size_t channels() const { return static_cast<std::size_t>(s.channels); }
};

Inputs inputs(int spatial) {
  Inputs in;
  in.s = BatchNormShape{4, 3, spatial};
  in.x = uniform(in.total(), 21, -2.0f, 2.0f);
  in.dy = uniform(in.total(), 22);
  in.gamma = uniform(3, 23, 0.5f, 1.5f);
  in.beta = uniform(3, 24);
  return in;
}

struct Results {
  std::vector<float> y, inference, running, saved, dx, dgamma, dbeta;
};

// Training forward, inference forward and backward, fused or as the two ops in turn.
Results run(Backend& b, const Inputs& in, Activation a, bool fused) {
  Io io(b);
  const std::size_t n = in.total(), c = in.channels();
  float* y = io.out(n);
  float* inference = io.out(n);
  float* running_mean = io.put(std::vector<float>(c, 0.0f));
  float* running_var = io.put(std::vector<float>(c, 1.0f));
  float* mean = io.out(c);
  float* inv_std = io.out(c);
  float* affine = io.out(2 * c);
  float* dx = io.out(n);
  float* dgamma = io.out(c);
  float* dbeta = io.out(c);
  const float* x = io.put(in.x);
  const float* dy = io.put(in.dy);
  const float* gamma = io.put(in.gamma);
  const float* beta = io.put(in.beta);
  const auto rows = static_cast<std::size_t>(in.s.n);
  const std::size_t cols = n / rows;
  if (fused) {
    b.batchnorm_activation_forward_training(in.s, a, kEps, kDecay, x, gamma, beta, y, running_mean,
                                            running_var, mean, inv_std, affine);
    b.batchnorm_activation_forward_inference(in.s, a, kEps, x, gamma, beta, running_mean,
                                             running_var, inference);
    b.batchnorm_activation_backward(in.s, a, x, dy, gamma, mean, inv_std, affine, dx, dgamma,
                                    dbeta);
  } else {
    float* z = io.out(n);
    float* g = io.out(n);
    b.batchnorm_forward_training(in.s, kEps, kDecay, x, gamma, beta, z, running_mean, running_var,
                                 mean, inv_std);
    b.activation_forward(a, rows, cols, z, y);
    b.batchnorm_forward_inference(in.s, kEps, x, gamma, beta, running_mean, running_var, g);
    b.activation_forward(a, rows, cols, g, inference);
    b.activation_backward(a, rows, cols, z, y, dy, g);
    b.batchnorm_backward(in.s, x, g, gamma, mean, inv_std, dx, dgamma, dbeta);
  }
  Results r{io.get(y, n),  io.get(inference, n), io.get(running_mean, c), io.get(mean, c),
            io.get(dx, n), io.get(dgamma, c),    io.get(dbeta, c)};
  const auto var = io.get(running_var, c), is = io.get(inv_std, c);
  r.running.insert(r.running.end(), var.begin(), var.end());
  r.saved.insert(r.saved.end(), is.begin(), is.end());
  return r;
}

// The fused training forward's output for x, for the finite differences.
std::vector<float> forward(Backend& b, const Inputs& in, Activation a,
                           const std::vector<float>& x) {
  Io io(b);
  const std::size_t c = in.channels();
  float* y = io.out(in.total());
  b.batchnorm_activation_forward_training(in.s, a, kEps, kDecay, io.put(x), io.put(in.gamma),
                                          io.put(in.beta), y, io.put(std::vector<float>(c, 0.0f)),
                                          io.put(std::vector<float>(c, 1.0f)), io.out(c), io.out(c),
                                          io.out(2 * c));
  return io.get(y, in.total());
}

TEST_CASE("op batch normalization + activation, fused: the two ops' bits, gradient, parity") {
  const Activation a = GENERATE(Activation::kRelu, Activation::kLeakyRelu, Activation::kTanh,
                                Activation::kSigmoid, Activation::kGelu, Activation::kSilu);
  const int spatial = GENERATE(1, 3, 37);
  INFO("activation " << static_cast<int>(a) << ", spatial " << spatial);
  const Inputs in = inputs(spatial);
  CpuBackend cpu;
  const Results on_cpu = run(cpu, in, a, true);
  for_each_backend([&](Backend& b) {
    INFO(b.name());
    const Results fused = run(b, in, a, true), apart = run(b, in, a, false);
    CHECK(fused.y == apart.y);
    CHECK(fused.inference == apart.inference);
    CHECK(fused.running == apart.running);
    CHECK(fused.saved == apart.saved);
    if (ops::batchnorm_gradient_is_exact(a)) {
      CHECK(fused.dx == apart.dx);
      CHECK(fused.dgamma == apart.dgamma);
      CHECK(fused.dbeta == apart.dbeta);
    } else {
      near("dx vs the two ops", fused.dx, apart.dx, kFloatContraction);
      near("dgamma vs the two ops", fused.dgamma, apart.dgamma, kFloatContraction);
      near("dbeta vs the two ops", fused.dbeta, apart.dbeta, kFloatContraction);
    }
    // Not a vacuous match: every output was written (no NaN left from Io::out).
    for (const auto* v : {&fused.y, &fused.inference, &fused.dx, &fused.dgamma})
      CHECK(std::none_of(v->begin(), v->end(), [](float f) { return std::isnan(f); }));
    near("y vs cpu", fused.y, on_cpu.y, kParity);
    near("dx vs cpu", fused.dx, on_cpu.dx, kParity);
    near("dgamma vs cpu", fused.dgamma, on_cpu.dgamma, kParity);
    // ReLU's kinks make finite differences unreliable; its bits match the two ops above.
    if (a == Activation::kRelu || a == Activation::kLeakyRelu || spatial > 3) return;
    auto values = in.x;
    check_gradient("dx", values, fused.dx,
                   [&](const std::vector<float>& v) { return dot(forward(b, in, a, v), in.dy); });
  });
}

TEST_CASE("op sum + activation, fused: axpy's and the activation's bits, parity") {
  const Activation a =
      GENERATE(Activation::kIdentity, Activation::kRelu, Activation::kTanh, Activation::kGelu);
  INFO("activation " << static_cast<int>(a));
  const std::size_t n = 1000;  // more than one block and one CPU range
  const auto x = uniform(n, 31, -2.0f, 2.0f), y0 = uniform(n, 32, -2.0f, 2.0f);
  const auto sum = [&](Backend& b, bool fused) {
    Io io(b);
    float* y = io.put(y0);
    if (fused) {
      b.add_activation_forward(a, n, io.put(x), y);
    } else {
      b.axpy(n, 1.0f, io.put(x), y);
      b.activation_forward(a, 1, n, y, y);
    }
    return io.get(y, n);
  };
  CpuBackend cpu;
  const std::vector<float> on_cpu = sum(cpu, true);
  for_each_backend([&](Backend& b) {
    INFO(b.name());
    const std::vector<float> fused = sum(b, true);
    CHECK(fused == sum(b, false));
    near("vs cpu", fused, on_cpu, kParity);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = y0[i] + x[i];
    if (a == Activation::kIdentity) near("vs y + x", fused, want, kReference);
  });
}

TEST_CASE("op sum + activation, backward with a gradient term: axpy's and the gradient's bits") {
  const Activation a =
      GENERATE(Activation::kIdentity, Activation::kRelu, Activation::kTanh, Activation::kGelu);
  INFO("activation " << static_cast<int>(a));
  const std::size_t n = 1000;
  const auto x = uniform(n, 33, -2.0f, 2.0f), dy0 = uniform(n, 34), term = uniform(n, 35);
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);  // any output; ReLU's: its sign
  const auto gradient = [&](Backend& b, bool fused) {
    Io io(b);
    float* dy = io.put(dy0);
    const float* in = ops::activation_reads_input(a) ? io.put(x) : nullptr;
    if (fused) {
      b.add_activation_backward(a, n, in, io.put(y), io.put(term), dy);
    } else {
      b.axpy(n, 1.0f, io.put(term), dy);
      b.activation_backward(a, 1, n, in, io.put(y), dy, dy);
    }
    return io.get(dy, n);
  };
  CpuBackend cpu;
  const std::vector<float> on_cpu = gradient(cpu, true);
  for_each_backend([&](Backend& b) {
    INFO(b.name());
    const std::vector<float> fused = gradient(b, true);
    CHECK(fused == gradient(b, false));
    near("vs cpu", fused, on_cpu, kParity);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = dy0[i] + term[i];
    if (a == Activation::kIdentity) near("vs dy + term", fused, want, kReference);
  });
}

TEST_CASE("op sum + activation: softmax refused") {
  for_each_backend([&](Backend& b) {
    Io io(b);
    CHECK_THROWS(b.add_activation_forward(Activation::kSoftmax, 4, io.out(4), io.out(4)));
    CHECK_THROWS(b.add_activation_backward(Activation::kSoftmax, 4, nullptr, io.out(4), io.out(4),
                                           io.out(4)));
  });
}

TEST_CASE("op batch normalization + activation: softmax and a missing scale and shift refused") {
  const Inputs in = inputs(3);
  for_each_backend([&](Backend& b) {
    Io io(b);
    const std::size_t n = in.total(), c = in.channels();
    float* y = io.out(n);
    CHECK_THROWS(b.batchnorm_activation_forward_inference(
        in.s, Activation::kSoftmax, kEps, io.put(in.x), io.put(in.gamma), io.put(in.beta),
        io.put(std::vector<float>(c, 0.0f)), io.put(std::vector<float>(c, 1.0f)), y));
    CHECK_THROWS(b.batchnorm_activation_forward_training(
        in.s, Activation::kRelu, kEps, kDecay, io.put(in.x), io.put(in.gamma), io.put(in.beta), y,
        io.out(c), io.out(c), io.out(c), io.out(c), nullptr));
  });
}

}  // namespace
}  // namespace dl::testing
