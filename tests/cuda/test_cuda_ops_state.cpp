// The CUDA backend's ops that keep state or move memory, against the CPU backend: dropout masks
// (bit for bit), batch normalization, the updaters over several steps, the flat copies, the
// device cache, two workers' streams on one GPU and the device batch gather (bit for bit). Each
// case is tagged [gpu] and returns at once, counted as skipped, when no CUDA device is visible.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/update_terms_fixture.hpp"
#include "caching_allocator.hpp"
#include "core/error.hpp"
#include "cuda_backend.hpp"
#include "gpu_test_support.hpp"

namespace {

using dl::Backend;
using dl::FloatBuffer;
using dl::IndexBuffer;
using dl::test::cpu;
using dl::test::gpu_backends;
using dl::test::random_floats;
using dl::test::require_close;
using dl::test::to_device;
using dl::test::to_host;
using dl::test::unwritten;
using dl::test::unwritten_host;

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
  const dl::UpdateTermRanges terms = dl::testing::mixed_update_terms(kN, 40);
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
      cpu().updater_step(h, kN, params.data(), grads.data(), state.data(), terms);
      auto ggrads = to_device(*gpu, grads);
      gpu->updater_step(h, kN, gparams.data(), ggrads.data(), gstate.data(), terms);
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
