// Times the CPU backend's batch normalization kernels alone on ResNet-20's CIFAR shapes
// (configs/resnet20-cifar10.yaml: batch 128, 16 channels on 32x32, 32 on 16x16, 64 on 8x8), on
// each thread count given.
//   batchnorm_bench [REPETITIONS=50] [THREADS=1,2]
// Each kernel runs REPETITIONS times in a row after one warm-up call (hot caches, as far as a
// layer's tensors fit); the table gives the minimum and the median in microseconds per call.
// Inputs are random; the numbers say nothing about accuracy.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "op_timing.hpp"

namespace {

constexpr int kBatch = 128;
constexpr int kDefaultRepetitions = 50;
constexpr float kEps = 1e-5f;
constexpr float kDecay = 0.9f;

std::vector<float> random_values(std::size_t n, std::mt19937& rng, float low, float high) {
  std::uniform_real_distribution<float> u(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

void time_shape(dl::CpuBackend& be, const dl::BatchNormShape& s, int repetitions,
                const std::vector<int>& thread_counts) {
  std::mt19937 rng(7);
  const std::size_t n = static_cast<std::size_t>(s.n) * s.channels * s.spatial;
  const std::vector<float> x = random_values(n, rng, -2.0f, 3.0f);
  const std::vector<float> dy = random_values(n, rng, -1.0f, 1.0f);
  const std::vector<float> gamma = random_values(s.channels, rng, 0.5f, 1.5f);
  const std::vector<float> beta = random_values(s.channels, rng, -0.5f, 0.5f);
  std::vector<float> y(n), dx(n), running_mean(s.channels), running_var(s.channels, 1.0f);
  std::vector<float> save_mean(s.channels), save_inv_std(s.channels), dgamma(s.channels),
      dbeta(s.channels);
  const auto training = [&] {
    be.batchnorm_forward_training(s, kEps, kDecay, x.data(), gamma.data(), beta.data(), y.data(),
                                  running_mean.data(), running_var.data(), save_mean.data(),
                                  save_inv_std.data());
  };
  const auto inference = [&] {
    be.batchnorm_forward_inference(s, kEps, x.data(), gamma.data(), beta.data(),
                                   running_mean.data(), running_var.data(), y.data());
  };
  const auto backward = [&] {
    be.batchnorm_backward(s, x.data(), dy.data(), gamma.data(), save_mean.data(),
                          save_inv_std.data(), dx.data(), dgamma.data(), dbeta.data());
  };
  // ResNet's batch normalization + ReLU, as one op and as the two ops (ReLU in place, as the
  // model runs it unfused).
  std::vector<float> affine(2 * static_cast<std::size_t>(s.channels));
  const auto rows = static_cast<std::size_t>(s.n), cols = n / rows;
  const auto relu_training = [&] {
    be.batchnorm_activation_forward_training(s, dl::Activation::kRelu, kEps, kDecay, x.data(),
                                             gamma.data(), beta.data(), y.data(),
                                             running_mean.data(), running_var.data(),
                                             save_mean.data(), save_inv_std.data(), affine.data());
  };
  const auto relu_backward = [&] {
    be.batchnorm_activation_backward(s, dl::Activation::kRelu, x.data(), dy.data(), gamma.data(),
                                     save_mean.data(), save_inv_std.data(), affine.data(),
                                     dx.data(), dgamma.data(), dbeta.data());
  };
  std::vector<float> g(n);
  const auto apart_training = [&] {
    training();
    be.activation_forward(dl::Activation::kRelu, rows, cols, y.data(), y.data());
  };
  const auto apart_backward = [&] {
    be.activation_backward(dl::Activation::kRelu, rows, cols, nullptr, y.data(), dy.data(),
                           g.data());
    be.batchnorm_backward(s, x.data(), g.data(), gamma.data(), save_mean.data(),
                          save_inv_std.data(), dx.data(), dgamma.data(), dbeta.data());
  };
  const struct {
    const char* name;
    std::function<void()> call;
  } kernels[] = {{"forward training", training},
                 {"forward inference", inference},
                 {"backward", backward},
                 {"+ ReLU fused, forward training", relu_training},
                 {"+ ReLU fused, backward", relu_backward},
                 {"+ ReLU apart, forward training", apart_training},
                 {"+ ReLU apart, backward", apart_backward}};
  for (const auto& k : kernels) {
    std::printf("| %dx%dx%d | %s |", s.n, s.channels, s.spatial, k.name);
    dl::bench::print_min_median_cells(repetitions, /*cpu_time=*/false, thread_counts, k.call);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : kDefaultRepetitions;
  const std::vector<int> thread_counts =
      dl::bench::thread_counts_of(argc > 2 ? argv[2] : "1,2", "batchnorm_bench");
  dl::bench::print_min_median_header("shape (n x channels x spatial)", "kernel", thread_counts);
  dl::CpuBackend be;
  for (const dl::BatchNormShape& s :
       {dl::BatchNormShape{kBatch, 16, 32 * 32}, dl::BatchNormShape{kBatch, 32, 16 * 16},
        dl::BatchNormShape{kBatch, 64, 8 * 8}})
    time_shape(be, s, repetitions, thread_counts);
  return 0;
}
