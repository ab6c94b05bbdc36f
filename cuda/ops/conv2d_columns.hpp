// A convolution's backward pass as matrix products over its columns, for cuBLAS:
//   dw[o][(c, i, j)] = sum over samples n and outputs (oh, ow) of
//                      dy[n][o][oh][ow] * x[n][c][oh*sh + i - pad_top][ow*sw + j - pad_left]
//   dx[n][c][ih][iw] = sum over (o, i, j) with oh*sh + i - pad_top = ih, ow*sw + j - pad_left = iw
//                      of w[o][(c, i, j)] * dy[n][o][oh][ow]
// (zero where a window reads padding). The samples are taken in chunks. For each chunk the
// columns (im2col, in the CPU backend's layout: row (c, i, j), column (sample, oh, ow)) and dy
// reordered channel-major (row o, column (sample, oh, ow)) are written to the workspace; one
// product adds columns x dy^T into dw (overwriting it for the first chunk), a second one makes
// the columns' gradient w^T x dy in place of the columns, and each input value gathers its
// entries from it in window order. The chunks and so the order of every addition depend only on
// the sizes, and cuBLAS's products give the same bits on every run of one GPU model, so both
// gradients are deterministic. In mixed precision the columns, dy and w are rounded to the 16-bit
// format (as cuDNN's inputs were) and the products accumulate in float32.
//
// Why not cuDNN's backward-filter and backward-data: its deterministic algorithms took 280 and 370
// us per call for LeNet's weight gradients at batch 128 on an H200 (70% of the step's GPU time,
// Nsight Compute, 2026-11-26), and 64 us for the second layer's data gradient; its faster ones add
// with atomics, whose order changes from run to run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backend/ops/conv2d.hpp"
#include "launch_limits.hpp"
#include "ops/precision_cast.hpp"

namespace dl::gpu {

// The workspace one chunk takes at most. Large enough that LeNet-sized layers take their whole
// batch of 128-512 in one product; a layer whose one sample needs more still takes one sample
// per chunk (the workspace then grows to that sample's size).
inline constexpr std::size_t kColumnChunkFloats = std::size_t{1} << 24;  // 64 MiB

struct ColumnChunks {
  int samples = 0;                  // per chunk (the last may have fewer)
  std::size_t column_floats = 0;    // a full chunk's columns: (c, i, j) rows x its outputs
  std::size_t gradient_floats = 0;  // a full chunk's dy, channel-major
  std::size_t weight_floats = 0;    // the weights (their 16-bit copy in mixed precision)
  std::size_t workspace_floats() const { return column_floats + gradient_floats + weight_floats; }
};

// The chunks for g.batch samples: a function of the sizes alone.
ColumnChunks column_chunks(const Conv2dGeometry& g);

// columns[(c, i, j)][(s, oh, ow)] for the `samples` samples from `first_sample`.
void launch_convolution_columns(const Conv2dGeometry& g, int first_sample, int samples,
                                const float* x, float* columns, const LaunchLimits& limits,
                                cudaStream_t stream);
// channel_major[o][(s, oh, ow)] = dy[first_sample + s][o][oh][ow].
void launch_channel_major(const Conv2dGeometry& g, int first_sample, int samples, const float* dy,
                          float* channel_major, const LaunchLimits& limits, cudaStream_t stream);
// The same two in format f (16-bit values, rounded to nearest even): the inputs of the
// mixed-precision products, which run on tensor cores with float32 accumulation.
void launch_convolution_columns_to_half_format(HalfFormat f, const Conv2dGeometry& g,
                                               int first_sample, int samples, const float* x,
                                               void* columns, const LaunchLimits& limits,
                                               cudaStream_t stream);
void launch_channel_major_to_half_format(HalfFormat f, const Conv2dGeometry& g, int first_sample,
                                         int samples, const float* dy, void* channel_major,
                                         const LaunchLimits& limits, cudaStream_t stream);
// dx for the `samples` samples from `first_sample` from the gradient of their columns (laid out
// as the columns are): each input value gathers the entries that read it, i then j ascending.
void launch_columns_to_image(const Conv2dGeometry& g, int first_sample, int samples,
                             const float* column_gradient, float* dx, const LaunchLimits& limits,
                             cudaStream_t stream);

}  // namespace dl::gpu
