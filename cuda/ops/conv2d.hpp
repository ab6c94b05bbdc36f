// Launchers for the convolution's own kernels (conv2d.cu); the convolutions themselves are cuDNN
// calls (conv2d_cudnn.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include "launch_limits.hpp"
#include "ops/precision_cast.hpp"

namespace dl::gpu {

// A batch of `planes` = batch * channels image planes.
struct PlaneDims {
  int planes = 0, height = 0, width = 0;
};

// padded[p][h][w] = x[p][h - pad_top][w - pad_left] where that lies inside x, else 0. Makes the
// explicit zero padding for geometries cuDNN's symmetric padding cannot express.
void launch_pad_planes(PlaneDims x_dims, PlaneDims padded_dims, int pad_top, int pad_left,
                       const float* x, float* padded, const LaunchLimits& limits,
                       cudaStream_t stream);
// launch_pad_planes with `padded` in format f (16-bit values, rounded to nearest even): the
// padded input of a mixed-precision convolution in one pass.
void launch_pad_planes_to_half_format(HalfFormat f, PlaneDims x_dims, PlaneDims padded_dims,
                                      int pad_top, int pad_left, const float* x, void* padded,
                                      const LaunchLimits& limits, cudaStream_t stream);
// y[n][c][s] += b[c] over `spatial` positions per channel.
void launch_add_channel_bias(int batch, int channels, int spatial, const float* b, float* y,
                             const LaunchLimits& limits, cudaStream_t stream);
// y[n][c][s] = y16[n][c][s] (16-bit, format f) + b[c]: the mixed-precision forward's output
// back in float32, with its bias, in one pass.
void launch_add_channel_bias_from_half_format(HalfFormat f, int batch, int channels, int spatial,
                                              const void* y16, const float* b, float* y,
                                              const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
