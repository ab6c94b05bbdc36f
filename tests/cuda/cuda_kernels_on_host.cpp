// Every kernel of cuda/ on the host grid (cuda/host_emulator), through its launcher, against the
// CPU backend's op, under each launch limit of host_grid_limits(). Where the CUDA backend
// promises the CPU's bits (elementwise ops, dropout masks, gathers, pooling, updaters) the check
// is bit for bit; reductions that add in another order (sums of squares, losses, batch-norm
// statistics, softmax) get a tolerance; the bias gradients are checked against their documented
// order in cuda_kernels_on_host_sums.cpp. The kernels
// of the convolution that have no CPU op of their own (padding, 16-bit variants) are
// checked against a naive loop. host_grid_main.cpp then checks that every kernel ran.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/activation_reference.hpp"
#include "backend/cpu/activation.hpp"
#include "backend/cpu/batchnorm.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/dense.hpp"
#include "backend/cpu/dropout.hpp"
#include "backend/cpu/gather.hpp"
#include "backend/cpu/gradient_clip.hpp"
#include "backend/cpu/output_loss.hpp"
#include "backend/cpu/pooling.hpp"
#include "backend/cpu/updater.hpp"
#include "backend/cpu/vector_ops.hpp"
#include "backend/update_terms_fixture.hpp"
#include "config/enum_names.hpp"
#include "device_group_sum.hpp"
#include "host_grid_support.hpp"
#include "ops/activation.hpp"
#include "ops/batchnorm.hpp"
#include "ops/conv2d.hpp"
#include "ops/dense.hpp"
#include "ops/dropout.hpp"
#include "ops/gather.hpp"
#include "ops/gradient_clip.hpp"
#include "ops/output_loss.hpp"
#include "ops/pooling.hpp"
#include "ops/updater.hpp"
#include "ops/vector_ops.hpp"

namespace dl {
namespace {

using testing::check_near;
using testing::check_same_bits;
using testing::describe;
using testing::host_grid_limits;
using testing::random_floats;

constexpr cudaStream_t kStream = nullptr;
// Relative tolerance for sums added in another order than the CPU's (float32 results of double
// sums, or float32 sums over a few hundred terms).
constexpr double kReorderedSum = 1e-5;

TEST_CASE("host grid: fill, scale, axpy, sum of squares, non-finite flag") {
  const std::size_t n = 1000;
  const auto x = random_floats(n, 1);
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> filled(n, 0.0f);
    gpu::launch_fill(filled.data(), n, 0.25f, lim, kStream);
    check_same_bits("fill", filled, std::vector<float>(n, 0.25f));

    auto got = x, want = x;
    gpu::launch_scale(n, 0.3f, got.data(), lim, kStream);
    cpu::scale(n, 0.3f, want.data());
    check_same_bits("scale", got, want);

    got = want = random_floats(n, 2);
    gpu::launch_axpy(n, -1.5f, x.data(), got.data(), lim, kStream);
    cpu::axpy(n, -1.5f, x.data(), want.data());
    check_same_bits("axpy", got, want);

    std::vector<double> partials(static_cast<std::size_t>(lim.max_grid));
    std::vector<float> sum(1), cpu_sum(1);
    gpu::launch_sum_of_squares(n, x.data(), sum.data(), partials.data(), lim, kStream);
    cpu::sum_of_squares(n, x.data(), cpu_sum.data());
    check_near("sum of squares", sum, cpu_sum, kReorderedSum);

    int flag = 0;
    gpu::launch_flag_non_finite(n, x.data(), &flag, lim, kStream);
    CHECK(flag == 0);
    auto bad = x;
    bad[n - 3] = INFINITY;
    gpu::launch_flag_non_finite(n, bad.data(), &flag, lim, kStream);
    CHECK(flag == 1);
    CHECK_FALSE(cpu::all_finite(n, bad.data()));
  }
}

TEST_CASE("host grid: activations forward and backward, softmax rows") {
  const std::size_t rows = 7, cols = 45;
  const auto x = random_floats(rows * cols, 3);
  const auto dy = random_floats(rows * cols, 4);
  for (Activation a : testing::all_activations()) {
    INFO("activation " << enum_name(a));
    std::vector<float> want_y(x.size()), want_dx(x.size());
    cpu::activation_forward(a, rows, cols, x.data(), want_y.data());
    cpu::activation_backward(a, rows, cols, x.data(), want_y.data(), dy.data(), want_dx.data());
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim));
      std::vector<float> y(x.size()), dx(x.size());
      gpu::launch_activation_forward(a, rows, cols, x.data(), y.data(), lim, kStream);
      gpu::launch_activation_backward(a, rows, cols, x.data(), want_y.data(), dy.data(), dx.data(),
                                      lim, kStream);
      const double tol = a == Activation::kSoftmax ? kReorderedSum : 1e-6;
      check_near("forward", y, want_y, tol);
      check_near("backward", dx, want_dx, tol);
    }
  }
}

TEST_CASE("host grid: output layer losses and their gradients") {
  const int n = 9, k = 37;
  const auto z = random_floats(static_cast<std::size_t>(n) * k, 5);
  std::vector<std::int32_t> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = (i * 7) % k;
  struct Case {
    LossFunction loss;
    Activation act;
  };
  for (Case c : {Case{LossFunction::kMcxent, Activation::kSoftmax},
                 Case{LossFunction::kNegativeLogLikelihood, Activation::kSigmoid},
                 Case{LossFunction::kMse, Activation::kIdentity}}) {
    INFO("loss " << static_cast<int>(c.loss) << ", activation " << static_cast<int>(c.act));
    std::vector<float> want_out(z.size()), want_dz(z.size()), want_loss(1);
    cpu::output_loss({c.loss, c.act}, n, k, z.data(), labels.data(), want_out.data(),
                     want_dz.data(), 0.5f, want_loss.data());
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim));
      std::vector<float> out(z.size()), dz(z.size()), loss(1);
      std::vector<double> partials(static_cast<std::size_t>(lim.max_grid));
      gpu::launch_output_loss({c.loss, c.act}, n, k, z.data(), labels.data(), out.data(), dz.data(),
                              0.5f, loss.data(), partials.data(), lim, kStream);
      check_near("activations", out, want_out, kReorderedSum);
      check_near("dz", dz, want_dz, kReorderedSum);
      check_near("loss sum", loss, want_loss, kReorderedSum);
    }
  }
}

TEST_CASE("host grid: count_correct counts the rows the host counts") {
  const int n = 75, k = 10;
  auto z = random_floats(static_cast<std::size_t>(n) * k, 8);
  z[3 * k + 2] = z[3 * k + 7] = 9.0f;  // a tie: the first maximum (class 2) is the prediction
  std::vector<std::int32_t> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = (i * 3 + 1) % k;
  labels[3] = 7;
  float want = 0.0f;  // Backend::count_correct's rule: the first largest output
  for (int i = 0; i < n; ++i) {
    const float* row = z.data() + static_cast<std::size_t>(i) * k;
    want += static_cast<float>(std::max_element(row, row + k) - row == labels[i]);
  }
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    float count = -1.0f;
    gpu::launch_count_correct(n, k, z.data(), labels.data(), &count, lim, kStream);
    CHECK(count == want);
  }
}

TEST_CASE("host grid: dropout masks are the CPU's bit for bit") {
  const std::size_t n = 777;
  const auto x = random_floats(n, 6), dy = random_floats(n, 7);
  const float retain = 0.7f;
  const std::uint64_t seed = 42, counter = 3;
  std::vector<float> want_y(n), want_mask(n), want_dx(n);
  cpu::dropout_forward(n, retain, seed, counter, x.data(), want_y.data(), want_mask.data());
  cpu::dropout_backward(n, want_mask.data(), dy.data(), want_dx.data());
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> y(n), mask(n), dx(n);
    gpu::launch_dropout_forward(n, retain, seed, counter, x.data(), y.data(), mask.data(), lim,
                                kStream);
    gpu::launch_dropout_backward(n, mask.data(), dy.data(), dx.data(), lim, kStream);
    check_same_bits("y", y, want_y);
    check_same_bits("mask", mask, want_mask);
    check_same_bits("dx", dx, want_dx);
  }
}

TEST_CASE("host grid: the device-resident gather is the host's bit for bit") {
  const std::size_t sample_bytes = 50;
  const int stored = 12, n = 5;
  std::vector<std::uint8_t> pixels(sample_bytes * stored);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 37);
  std::vector<std::int32_t> labels(stored), indices = {11, 0, 4, 4, 7};
  for (int i = 0; i < stored; ++i) labels[i] = i % 10;
  std::vector<float> want(sample_bytes * n);
  std::vector<std::int32_t> want_labels(n);
  cpu::gather_samples(pixels.data(), labels.data(), sample_bytes, indices.data(), n, want.data(),
                      want_labels.data());
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> images(want.size());
    std::vector<std::int32_t> batch_labels(n);
    gpu::launch_gather_samples(pixels.data(), labels.data(), sample_bytes, indices.data(), n,
                               images.data(), batch_labels.data(), lim, kStream);
    check_same_bits("images", images, want);
    check_same_bits("labels", batch_labels, want_labels);
  }
}

TEST_CASE("host grid: gradient clipping by value and by norm") {
  const std::size_t n = 500;
  const auto x = random_floats(n, 8);
  const float sum_of_squares = 321.0f;
  for (bool always : {false, true}) {
    auto want_clip = x, want_norm = x;
    cpu::clip_values(n, 0.5f, want_clip.data());
    cpu::scale_to_norm(n, &sum_of_squares, 3.0f, always, want_norm.data());
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim) << ", always " << always);
      auto clip = x, norm = x;
      gpu::launch_clip_values(n, 0.5f, clip.data(), lim, kStream);
      gpu::launch_scale_to_norm(n, &sum_of_squares, 3.0f, always, norm.data(), lim, kStream);
      check_same_bits("clip", clip, want_clip);
      check_same_bits("norm", norm, want_norm);
    }
  }
}

TEST_CASE("host grid: updaters, one fused kernel per rule, with L2 and decay in its pass") {
  const std::size_t n = 300;
  // More term ranges than one launch carries, so the buffer goes in several windows.
  const UpdateTermRanges terms = testing::mixed_update_terms(n, 37);
  const auto params0 = random_floats(n, 9), grads = random_floats(n, 10);
  for (UpdaterType type :
       {UpdaterType::kSgd, UpdaterType::kNesterovs, UpdaterType::kAdam, UpdaterType::kRmsProp}) {
    UpdaterHyper h;
    h.type = type;
    h.learning_rate = 0.01f;
    h.momentum = 0.9f;
    h.step = 3;
    const auto state0 = random_floats(2 * n, 11, 0.0f, 1.0f);
    auto want_p = params0, want_s = state0;
    cpu::updater_step(h, n, want_p.data(), grads.data(), want_s.data(), terms);
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim) << ", updater " << static_cast<int>(type));
      auto p = params0, st = state0;
      gpu::launch_updater_step(h, n, p.data(), grads.data(), st.data(), terms, lim, kStream);
      check_near("params", p, want_p, 1e-6);
      check_near("state", st, want_s, 1e-6);
    }
  }
}

TEST_CASE("host grid: batch normalization, training, inference and backward") {
  // Planes of 10 (a block per channel); planes of one value (32 channels per block: one partial
  // block, then two blocks, the second partial). Alone and fused with an activation that reads
  // its output (ReLU, tanh) or its input (GELU).
  for (const Activation a :
       {Activation::kIdentity, Activation::kRelu, Activation::kTanh, Activation::kGelu}) {
    for (const BatchNormShape shape :
         {BatchNormShape{6, 5, 10}, BatchNormShape{6, 5, 1}, BatchNormShape{7, 40, 1}}) {
      const int spatial = shape.spatial;
      const std::size_t channels = static_cast<std::size_t>(shape.channels);
      const std::size_t total = static_cast<std::size_t>(shape.n) * channels * spatial;
      const auto x = random_floats(total, 12), dy = random_floats(total, 13);
      const auto gamma = random_floats(channels, 14, 0.5f, 1.5f),
                 beta = random_floats(channels, 15);
      std::vector<float> want_y(total), want_rm(channels, 0.1f), want_rv(channels, 1.0f),
          want_sm(channels), want_si(channels), want_affine(2 * channels);
      cpu::batchnorm_forward_training(shape, a, 1e-5f, 0.9f, x.data(), gamma.data(), beta.data(),
                                      want_y.data(), want_rm.data(), want_rv.data(), want_sm.data(),
                                      want_si.data(), want_affine.data());
      std::vector<float> want_inf(total), want_dx(total), want_dg(channels), want_db(channels);
      cpu::batchnorm_forward_inference(shape, a, 1e-5f, x.data(), gamma.data(), beta.data(),
                                       want_rm.data(), want_rv.data(), want_inf.data());
      cpu::batchnorm_backward(shape, a, x.data(), dy.data(), gamma.data(), want_sm.data(),
                              want_si.data(), want_affine.data(), want_dx.data(), want_dg.data(),
                              want_db.data());
      for (const auto& lim : host_grid_limits()) {
        INFO(describe(lim) << ", channels " << channels << ", spatial " << spatial
                           << ", activation " << static_cast<int>(a));
        std::vector<float> y(total), rm(channels, 0.1f), rv(channels, 1.0f), sm(channels),
            si(channels), affine(2 * channels);
        gpu::launch_batchnorm_forward_training(shape, a, 1e-5f, 0.9f, x.data(), gamma.data(),
                                               beta.data(), y.data(), rm.data(), rv.data(),
                                               sm.data(), si.data(), affine.data(), lim, kStream);
        std::vector<float> inf(total), dx(total), dg(channels), db(channels);
        gpu::launch_batchnorm_forward_inference(shape, a, 1e-5f, x.data(), gamma.data(),
                                                beta.data(), want_rm.data(), want_rv.data(),
                                                inf.data(), lim, kStream);
        gpu::launch_batchnorm_backward(shape, a, x.data(), dy.data(), gamma.data(), want_sm.data(),
                                       want_si.data(), want_affine.data(), dx.data(), dg.data(),
                                       db.data(), lim, kStream);
        check_near("y", y, want_y, kReorderedSum);
        check_near("saved scale and shift", affine, want_affine, kReorderedSum);
        check_near("running mean", rm, want_rm, kReorderedSum);
        check_near("running variance", rv, want_rv, kReorderedSum);
        check_near("inference", inf, want_inf, kReorderedSum);
        check_near("dx", dx, want_dx, kReorderedSum);
        check_near("dgamma", dg, want_dg, kReorderedSum);
        check_near("dbeta", db, want_db, kReorderedSum);
      }
    }
  }
}

}  // namespace
}  // namespace dl
