// Times the CPU backend's stride-1 3x3 convolutions alone on ResNet-20's CIFAR shapes
// (configs/resnet20-cifar10.yaml: batch 128, 16 channels on 32x32, 32 on 16x16, 64 on 8x8,
// padding 1), then its first layer (3 input channels) and its stride-2 layers (3x3, and the
// 1x1 projection shortcuts), on each thread count given: forward, backward with dx only (3x3 layers), backward
// with dW and db only, and the whole backward as the layer calls it.
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

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/gemm.hpp"
#include "op_timing.hpp"

namespace {

constexpr int kBatch = 128;
constexpr int kDefaultRepetitions = 20;
// The direct path (the first layer's 3 channels) has no dx-only backward.
constexpr int kLeastDxOnlyChannels = 8;

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

// ResNet-20's first layer: 3 input channels, 3x3, padding 1.
dl::Conv2dGeometry first_layer() {
  dl::Conv2dGeometry g = conv3x3(16, 32);
  g.in_channels = 3;
  return g;
}

// A stage's first layer (3x3, padding 1) or its projection shortcut (1x1): stride 2, channels
// doubled, the plane halved.
dl::Conv2dGeometry downsampling(int in_channels, int in_plane, int kernel) {
  dl::Conv2dGeometry g;
  g.batch = kBatch;
  g.in_channels = in_channels;
  g.out_channels = 2 * in_channels;
  g.in_height = g.in_width = in_plane;
  g.out_height = g.out_width = in_plane / 2;
  g.kernel_height = g.kernel_width = kernel;
  g.pad_top = g.pad_left = kernel / 2;
  g.stride_height = g.stride_width = 2;
  return g;
}

void time_shape(dl::CpuBackend& be, const dl::Conv2dGeometry& g, int repetitions,
                const std::vector<int>& thread_counts) {
  std::mt19937 rng(7);
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  const std::size_t n = static_cast<std::size_t>(g.batch) * g.in_channels * plane;
  const std::size_t out = static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height *
                          g.out_width;
  const std::size_t weights =
      static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height * g.kernel_width;
  const std::vector<float> x = random_values(n, rng), dy = random_values(out, rng);
  const std::vector<float> w = random_values(weights, rng), b(g.out_channels);
  std::vector<float> y(out), dx(n), dw(weights), db(g.out_channels);
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
    // The backend's contract always asks for dW and db (backend.hpp); only the 3x3 paths here
    // compute dx alone.
    if (g.in_channels < kLeastDxOnlyChannels && op.name == std::string("backward, dx only"))
      continue;
    std::printf("| %d x %dx%d -> %d, %dx%d | %s |", g.in_channels, g.in_height, g.in_width,
                g.out_channels, g.kernel_height, g.kernel_width, op.name);
    dl::bench::print_min_median_cells(repetitions, cpu_time, thread_counts, op.call);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : kDefaultRepetitions;
  const std::vector<int> thread_counts =
      dl::bench::thread_counts_of(argc > 2 ? argv[2] : "1,2", "conv3x3_bench");
  // The columns path's products (the first and the stride-2 layers) by the library a run takes.
  std::printf("%s; %s\n\n", dl::select_cpu_kernels(dl::CpuKernels::kAuto).c_str(),
              dl::configure_blas_for_this_cpu().c_str());
  dl::bench::print_min_median_header("layer (in x plane -> out, kernel)", "op", thread_counts);
  dl::CpuBackend be;
  for (const dl::Conv2dGeometry& g : {conv3x3(16, 32), conv3x3(32, 16), conv3x3(64, 8),
                                      first_layer(), downsampling(16, 32, 3), downsampling(32, 16, 3),
                                      downsampling(16, 32, 1), downsampling(32, 16, 1)})
    time_shape(be, g, repetitions, thread_counts);
  return 0;
}
