// Times the CPU backend's stride-1 3x3 convolutions alone on ResNet-20's CIFAR shapes
// (configs/resnet20-cifar10.yaml: batch 128, 16 channels on 32x32, 32 on 16x16, 64 on 8x8,
// padding 1), on each thread count given: forward, backward with dx only, backward with dW and
// db only, and the whole backward as the layer calls it.
//   conv3x3_bench [REPETITIONS=20] [THREADS=1,2]
// Each op runs REPETITIONS times in a row after one warm-up call; the table gives the minimum and
// the median in microseconds per call. With PROFILE_CPU_TIME set, 1-thread figures are the
// calling thread's CPU time (on a busy machine that leaves out other processes' time). Inputs
// are random; the numbers say nothing about accuracy.
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
constexpr int kDefaultRepetitions = 20;

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

dl::Conv2dGeometry conv3x3(int channels, int plane) {
  dl::Conv2dGeometry g;
  g.batch = kBatch;
  g.in_channels = g.out_channels = channels;
  g.in_height = g.in_width = g.out_height = g.out_width = plane;
  g.kernel_height = g.kernel_width = 3;
  g.pad_top = g.pad_left = 1;
  return g;
}

void time_shape(dl::CpuBackend& be, const dl::Conv2dGeometry& g, int repetitions,
                const std::vector<int>& thread_counts) {
  std::mt19937 rng(7);
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  const std::size_t n = static_cast<std::size_t>(g.batch) * g.in_channels * plane;
  const std::size_t weights = static_cast<std::size_t>(g.out_channels) * g.in_channels * 9;
  const std::vector<float> x = random_values(n, rng), dy = random_values(n, rng);
  const std::vector<float> w = random_values(weights, rng), b(g.out_channels);
  std::vector<float> y(n), dx(n), dw(weights), db(g.out_channels);
  std::vector<float> workspace(be.conv2d_workspace_floats(g));
  float* ws = workspace.data();
  const struct {
    const char* name;
    std::function<void()> call;
  } ops[] = {
      {"forward", [&] { be.conv2d_forward(g, x.data(), w.data(), b.data(), y.data(), ws); }},
      {"backward, dx only",
       [&] {
         be.conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), nullptr, nullptr, ws);
       }},
      {"backward, dW and db only",
       [&] {
         be.conv2d_backward(g, x.data(), w.data(), dy.data(), nullptr, dw.data(), db.data(), ws);
       }},
      {"backward",
       [&] {
         be.conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), ws);
       }},
  };
  const bool cpu_time = dl::bench::cpu_time_requested();
  for (const auto& op : ops) {
    std::printf("| %d x %dx%d | %s |", g.in_channels, g.in_height, g.in_width, op.name);
    dl::bench::print_min_median_cells(repetitions, cpu_time, thread_counts, op.call);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : kDefaultRepetitions;
  const std::vector<int> thread_counts =
      dl::bench::thread_counts_of(argc > 2 ? argv[2] : "1,2", "conv3x3_bench");
  dl::bench::print_min_median_header("layer (channels x plane)", "op", thread_counts);
  dl::CpuBackend be;
  for (const dl::Conv2dGeometry& g : {conv3x3(16, 32), conv3x3(32, 16), conv3x3(64, 8)})
    time_shape(be, g, repetitions, thread_counts);
  return 0;
}
