// The kernels around the cuDNN and cuBLAS products on the host grid: pooling, the convolution's
// padding and bias (float32 and 16-bit), the dense layer's bias, the 16-bit casts and
// the GPU collective's in-order sum (the bias gradients: cuda_kernels_on_host_sums.cpp). Parity
// with the CPU backend where it has the op; a naive loop where it does not.
#include <cstdint>
#include <vector>

#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/dense.hpp"
#include "backend/cpu/pooling.hpp"
#include "device_group_sum.hpp"
#include "host_grid.hpp"
#include "host_grid_support.hpp"
#include "ops/conv2d.hpp"
#include "ops/dense.hpp"
#include "ops/pooling.hpp"
#include "ops/precision_cast.hpp"

namespace dl {
namespace {

using testing::check_same_bits;
using testing::describe;
using testing::host_grid_limits;
using testing::random_floats;

constexpr cudaStream_t kStream = nullptr;

TEST_CASE("host grid: max and average pooling, overlapping and padded windows") {
  Pool2dGeometry g;
  g.batch = 2;
  g.in_channels = g.out_channels = 3;
  g.in_height = 7;
  g.in_width = 6;
  g.kernel_height = 3;
  g.kernel_width = 2;
  g.stride_height = 2;
  g.stride_width = 1;
  g.pad_top = 1;
  g.pad_left = 1;
  g.out_height = (7 + 2 - 3) / 2 + 1;
  g.out_width = (6 + 2 - 2) / 1 + 1;
  const std::size_t in = 2u * 3 * 7 * 6, out = 2u * 3 * g.out_height * g.out_width;
  auto x = random_floats(in, 20);
  x[5] = x[6];  // a tie: the smaller index wins
  const auto dy = random_floats(out, 21);
  for (PoolingType type : {PoolingType::kMax, PoolingType::kAvg}) {
    std::vector<float> want_y(out), want_dx(in);
    std::vector<std::int32_t> want_arg(out, -7);
    cpu::pool2d_forward(g, type, x.data(), want_y.data(), want_arg.data());
    cpu::pool2d_backward(g, type, x.data(), want_y.data(), dy.data(), want_dx.data(),
                         want_arg.data());
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim) << ", pooling " << static_cast<int>(type));
      std::vector<float> y(out), dx(in);
      std::vector<std::int32_t> arg(out, -7);
      gpu::launch_pool2d_forward(g, type, x.data(), y.data(), arg.data(), lim, kStream);
      gpu::launch_pool2d_backward(g, type, dy.data(), dx.data(), want_arg.data(), lim, kStream);
      check_same_bits("y", y, want_y);
      if (type == PoolingType::kMax) check_same_bits("argmax", arg, want_arg);
      // Average pooling's backward adds each input's share in another order than the CPU's
      // scatter, so only max pooling is bit for bit.
      if (type == PoolingType::kMax) {
        check_same_bits("dx", dx, want_dx);
      } else {
        testing::check_near("dx", dx, want_dx, 1e-6);
      }
    }
  }
}

// Rounds through the format the way the kernels' stores do.
float through(gpu::HalfFormat f, float v) {
  return f == gpu::HalfFormat::kHalf ? __half2float(__float2half_rn(v))
                                     : __bfloat162float(__float2bfloat16_rn(v));
}

TEST_CASE("host grid: the convolution's padding, bias and bias gradient") {
  const gpu::PlaneDims small{4, 5, 3}, padded{4, 8, 6};
  const int top = 1, left = 2;
  const auto x = random_floats(4u * 5 * 3, 22);
  const std::size_t padded_size = 4u * 8 * 6;
  // Naive reference: padded[p][h][w] = x[p][h - top][w - left] inside x, else 0.
  std::vector<float> want_pad(padded_size, 0.0f);
  for (int q = 0; q < 4; ++q)
    for (int h = 0; h < 5; ++h)
      for (int w = 0; w < 3; ++w)
        want_pad[(q * 8 + h + top) * 6 + w + left] = x[(q * 5 + h) * 3 + w];
  // Bias and its gradient against the CPU convolution: with zero weights y = b, and db sums dy.
  Conv2dGeometry g;
  g.batch = 3;
  g.in_channels = 2;
  g.out_channels = 4;
  g.in_height = g.in_width = g.out_height = g.out_width = 5;
  g.kernel_height = g.kernel_width = 1;
  const int spatial = 25;
  const std::size_t y_size = 3u * 4 * spatial;
  const auto b = random_floats(4, 24), dy = random_floats(y_size, 25);
  const auto cx = random_floats(3u * 2 * spatial, 26);
  const std::vector<float> zero_w(2 * 4, 0.0f);
  std::vector<float> want_bias(y_size), work(cpu::conv2d_workspace_floats(g) + 1);
  cpu::conv2d_forward(g, cx.data(), zero_w.data(), b.data(), want_bias.data(), work.data());
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> got_pad(padded_size, 9.0f);
    gpu::launch_pad_planes(small, padded, top, left, x.data(), got_pad.data(), lim, kStream);
    check_same_bits("pad", got_pad, want_pad);
    std::vector<float> y(y_size, 0.0f);
    gpu::launch_add_channel_bias(3, 4, spatial, b.data(), y.data(), lim, kStream);
    check_same_bits("bias", y, want_bias);

    for (gpu::HalfFormat f : {gpu::HalfFormat::kHalf, gpu::HalfFormat::kBFloat16}) {
      INFO("format " << static_cast<int>(f));
      std::vector<std::uint16_t> pad16(padded_size, 0xffff);
      gpu::launch_pad_planes_to_half_format(f, small, padded, top, left, x.data(), pad16.data(),
                                            lim, kStream);
      std::vector<float> widened(padded_size), want_widened(padded_size);
      gpu::launch_cast_to_float(f, padded_size, pad16.data(), widened.data(), lim, kStream);
      for (std::size_t i = 0; i < padded_size; ++i) want_widened[i] = through(f, want_pad[i]);
      check_same_bits("pad to 16-bit", widened, want_widened);

      std::vector<std::uint16_t> y16(y_size);
      gpu::launch_cast_to_half_format(f, y_size, dy.data(), y16.data(), lim, kStream);
      std::vector<float> yb(y_size), want_yb(y_size);
      gpu::launch_add_channel_bias_from_half_format(f, 3, 4, spatial, y16.data(), b.data(),
                                                    yb.data(), lim, kStream);
      for (std::size_t i = 0; i < y_size; ++i) want_yb[i] = through(f, dy[i]) + b[(i / 25) % 4];
      check_same_bits("bias from 16-bit", yb, want_yb);
    }
  }
}

TEST_CASE("host grid: the dense layer's bias is the CPU's bit for bit") {
  const int n = 13, in = 3, out = 70;
  const auto x = random_floats(static_cast<std::size_t>(n) * in, 27);
  const auto b = random_floats(out, 28);
  const std::vector<float> zero_w(static_cast<std::size_t>(in) * out, 0.0f);
  std::vector<float> want_y(static_cast<std::size_t>(n) * out);
  cpu::dense_forward(n, in, out, x.data(), zero_w.data(), b.data(), want_y.data());
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> y(want_y.size(), 5.0f);
    gpu::launch_broadcast_bias_rows(n, out, b.data(), y.data(), lim, kStream);
    check_same_bits("bias rows", y, want_y);
  }
}

TEST_CASE("host grid: the GPU collective's sum adds sources in worker order") {
  const std::size_t n = 333;
  std::vector<std::vector<float>> sources;
  std::vector<const float*> pointers;
  for (int s = 0; s < 11; ++s) sources.push_back(random_floats(n, 40 + s));  // two launches
  for (const auto& s : sources) pointers.push_back(s.data());
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sum = sources[0][i];
    for (std::size_t s = 1; s < sources.size(); ++s) sum += sources[s][i];
    want[i] = sum;
  }
  for (const auto& lim : host_grid_limits()) {
    INFO(describe(lim));
    std::vector<float> dst(n, 1.0f);
    gpu::launch_sum_in_order(dst.data(), pointers, n, lim, kStream);
    check_same_bits("sum", dst, want);
  }
}

}  // namespace
}  // namespace dl
