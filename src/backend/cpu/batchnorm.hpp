// CPU implementation of the Backend's batch normalization ops (see backend/backend.hpp for the
// contract).
//
// Layout NCHW: value (i, c, s) of x is x[(i * channels + c) * spatial + s]; the statistics of
// channel c are taken over its m = n * spatial values.
// Training:  mean, var = batch mean and biased variance; inv_std = 1 / sqrt(var + eps);
//            y = gamma * (x - mean) * inv_std + beta; save_mean = mean, save_inv_std = inv_std;
//            running_mean = decay * running_mean + (1 - decay) * mean,
//            running_var  = decay * running_var + (1 - decay) * var * m / (m - 1)
//            (the unbiased variance; with m == 1 the biased one, which is 0).
// Inference: y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta.
// Fused activation a (elementwise): y = a(x * scale + shift); the backward pass first takes dy
//            through a's gradient at the recomputed x * scale + shift, in both of its passes.
// Backward:  with xhat = (x - mean) * inv_std,
//            dbeta = sum dy, dgamma = sum dy * xhat,
//            dx = gamma * inv_std / m * (m * dy - dbeta - xhat * dgamma).
// Each channel's values are cut into parts of whole samples by the shape alone, each part's sums
// made in a fixed order (float partial sums of at most 32 values each, added in double:
// batchnorm.cpp) and the parts' added in part order (the variance by Chan's pairwise update), so
// the results are the same bits on any thread count; a call runs whole channels or, where they
// are too few for the threads, parts as its tasks (batchnorm_parts.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// a: the fused elementwise activation (ops/batchnorm.hpp), kIdentity for none.
void batchnorm_forward_training(const BatchNormShape& s, Activation a, float eps, float decay,
                                const float* x, const float* gamma, const float* beta, float* y,
                                float* running_mean, float* running_var, float* save_mean,
                                float* save_inv_std, float* save_affine);
void batchnorm_forward_inference(const BatchNormShape& s, Activation a, float eps, const float* x,
                                 const float* gamma, const float* beta, const float* running_mean,
                                 const float* running_var, float* y);
void batchnorm_backward(const BatchNormShape& s, Activation a, const float* x, const float* dy,
                        const float* gamma, const float* save_mean, const float* save_inv_std,
                        const float* save_affine, float* dx, float* dgamma, float* dbeta);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
