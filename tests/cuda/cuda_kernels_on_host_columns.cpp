// The data movement of the convolution's backward pass by columns on the host grid: the columns,
// dy in channel-major order and the columns' gradient gathered back into dx, for a range of
// samples that does not start at 0 (a later chunk), against naive loops, under every launch
// limit; and the chunk rule's arithmetic.
#include <algorithm>
#include <vector>

#include "host_grid.hpp"
#include "host_grid_support.hpp"
#include "ops/conv2d_columns.hpp"

namespace dl {
namespace {

using testing::describe;
using testing::host_grid_limits;
using testing::random_floats;

constexpr cudaStream_t kStream = nullptr;

Conv2dGeometry padded_strided_geometry() {
  Conv2dGeometry g;
  g.batch = 4;
  g.in_channels = 2;
  g.in_height = 7;
  g.in_width = 6;
  g.out_channels = 3;
  g.kernel_height = 3;
  g.kernel_width = 2;
  g.stride_height = 2;
  g.stride_width = 1;
  g.pad_top = 1;
  g.pad_left = 1;
  g.out_height = (7 + 2 - 3) / 2 + 1;
  g.out_width = (6 + 1 - 2) / 1 + 1;
  return g;
}

TEST_CASE("host grid: columns, channel-major dy and columns to image for a later chunk") {
  const Conv2dGeometry g = padded_strided_geometry();
  const int first = 1, samples = 2;
  const int outputs = g.out_height * g.out_width;
  const auto x = random_floats(static_cast<std::size_t>(g.batch) * 2 * 7 * 6, 40);
  const auto dy = random_floats(static_cast<std::size_t>(g.batch) * 3 * outputs, 41);
  const int window = g.in_channels * g.kernel_height * g.kernel_width;
  const int k = samples * outputs;
  // The naive loops: each window entry is read into the columns and, from a random columns'
  // gradient, added back to the input value it read (for each input value in (i, j) order, as the
  // kernel gathers them).
  const auto column_gradient = random_floats(static_cast<std::size_t>(window) * k, 42);
  const std::size_t image = static_cast<std::size_t>(g.in_channels) * g.in_height * g.in_width;
  std::vector<float> want_columns(column_gradient.size());
  std::vector<float> want_dx(static_cast<std::size_t>(g.batch) * image, -3.0f);
  std::fill(want_dx.begin() + first * image, want_dx.begin() + (first + samples) * image, 0.0f);
  for (int c = 0; c < g.in_channels; ++c)
    for (int i = 0; i < g.kernel_height; ++i)
      for (int j = 0; j < g.kernel_width; ++j)
        for (int s = 0; s < samples; ++s)
          for (int oh = 0; oh < g.out_height; ++oh)
            for (int ow = 0; ow < g.out_width; ++ow) {
              const int ih = oh * g.stride_height + i - g.pad_top;
              const int iw = ow * g.stride_width + j - g.pad_left;
              const std::size_t entry =
                  static_cast<std::size_t>((c * g.kernel_height + i) * g.kernel_width + j) * k +
                  static_cast<std::size_t>(s * outputs + oh * g.out_width + ow);
              if (ih < 0 || ih >= g.in_height || iw < 0 || iw >= g.in_width) continue;
              const std::size_t at = (first + s) * image +
                                     (static_cast<std::size_t>(c) * g.in_height + ih) * g.in_width +
                                     static_cast<std::size_t>(iw);
              want_columns[entry] = x[at];
              want_dx[at] += column_gradient[entry];
            }
  std::vector<float> want_major(static_cast<std::size_t>(g.out_channels) * k);
  for (int o = 0; o < g.out_channels; ++o)
    for (int s = 0; s < samples; ++s)
      for (int p = 0; p < outputs; ++p)
        want_major[(static_cast<std::size_t>(o) * samples + s) * outputs + p] =
            dy[(static_cast<std::size_t>(first + s) * g.out_channels + o) * outputs + p];
  for (const gpu::LaunchLimits& limits : host_grid_limits()) {
    INFO(describe(limits));
    std::vector<float> dx(want_dx.size(), -3.0f);
    gpu::launch_columns_to_image(g, first, samples, column_gradient.data(), dx.data(), limits,
                                 kStream);
    CHECK(dx == want_dx);  // same additions in the same order: the same bits
    std::vector<float> columns(want_columns.size(), -1.0f), major(want_major.size(), -1.0f);
    gpu::launch_convolution_columns(g, first, samples, x.data(), columns.data(), limits, kStream);
    gpu::launch_channel_major(g, first, samples, dy.data(), major.data(), limits, kStream);
    CHECK(columns == want_columns);
    CHECK(major == want_major);
  }
}

TEST_CASE("the backward pass's column chunks cover the batch and fit the chunk budget") {
  Conv2dGeometry lenet = padded_strided_geometry();
  lenet.batch = 512;
  const gpu::ColumnChunks small = gpu::column_chunks(lenet);
  CHECK(small.samples == 512);  // a small layer: the whole batch in one product
  Conv2dGeometry wide = lenet;  // 64 x 3 x 3 windows over 128 x 128 outputs: ~10 Mi floats each
  wide.in_channels = 64;
  wide.kernel_height = wide.kernel_width = 3;
  wide.in_height = wide.out_height = 128;
  wide.in_width = wide.out_width = 128;
  wide.stride_height = wide.stride_width = 1;
  wide.batch = 3;
  const gpu::ColumnChunks one = gpu::column_chunks(wide);
  CHECK(one.samples == 1);  // over half the budget per sample: one sample per chunk
  CHECK(one.column_floats == 64u * 9 * 128 * 128);
  CHECK(one.gradient_floats == 3u * 128 * 128);
  wide.in_channels = 8;  // 72 + 3 values per output: 1.2 Mi floats per sample
  const gpu::ColumnChunks several = gpu::column_chunks(wide);
  CHECK(several.samples == 3);
  CHECK(several.workspace_floats() <= gpu::kColumnChunkFloats);
  wide.batch = 40;
  const gpu::ColumnChunks capped = gpu::column_chunks(wide);
  CHECK(capped.samples == static_cast<int>(gpu::kColumnChunkFloats / (75u * 128 * 128)));
  CHECK(capped.workspace_floats() <= gpu::kColumnChunkFloats);
}

}  // namespace
}  // namespace dl
