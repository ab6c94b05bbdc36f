// Launchers for batch normalization (batchnorm.cu); the semantics are the CPU backend's
// (backend/cpu/batchnorm.hpp), the shape the op contract's (backend/ops/batchnorm.hpp), statistics
// accumulated in double.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/ops/batchnorm.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

// a: the fused elementwise activation (ops/batchnorm.hpp), kIdentity for none; save_affine
// (2 * channels floats) is required unless a is the identity.
void launch_batchnorm_forward_training(BatchNormShape d, Activation a, float eps, float decay,
                                       const float* x, const float* gamma, const float* beta,
                                       float* y, float* running_mean, float* running_var,
                                       float* save_mean, float* save_inv_std, float* save_affine,
                                       const LaunchLimits& limits, cudaStream_t stream);
void launch_batchnorm_forward_inference(BatchNormShape d, Activation a, float eps, const float* x,
                                        const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var,
                                        float* y, const LaunchLimits& limits, cudaStream_t stream);
void launch_batchnorm_backward(BatchNormShape d, Activation a, const float* x, const float* dy,
                               const float* gamma, const float* save_mean,
                               const float* save_inv_std, const float* save_affine, float* dx,
                               float* dgamma, float* dbeta, const LaunchLimits& limits,
                               cudaStream_t stream);

}  // namespace dl::gpu
