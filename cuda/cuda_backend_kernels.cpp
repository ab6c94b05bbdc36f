// CudaBackend's ops that are one launch of our own kernels on the worker's stream: vector
// arithmetic, pooling, activations and the output layer, dropout, batch normalization and the
// updaters. Construction, memory, dense and convolution are in cuda_backend.cpp.
#include <cuda_runtime.h>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "ops/activation.hpp"
#include "ops/batchnorm.hpp"
#include "ops/dropout.hpp"
#include "ops/gradient_clip.hpp"
#include "ops/output_loss.hpp"
#include "ops/pooling.hpp"
#include "ops/updater.hpp"
#include "ops/vector_ops.hpp"

namespace dl::gpu {

// ---- vector arithmetic ------------------------------------------------------------------------

void CudaBackend::scale(std::size_t n, float alpha, float* x) {
  activate();
  launch_scale(n, alpha, x, limits_, stream_.get());
}

void CudaBackend::axpy(std::size_t n, float alpha, const float* x, float* y) {
  activate();
  launch_axpy(n, alpha, x, y, limits_, stream_.get());
}

void CudaBackend::sum_of_squares(std::size_t n, const float* x, float* result) {
  activate();
  launch_sum_of_squares(n, x, result, partials_, limits_, stream_.get());
}

void CudaBackend::clip_values(std::size_t n, float limit, float* x) {
  activate();
  launch_clip_values(n, limit, x, limits_, stream_.get());
}

void CudaBackend::scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold,
                                bool always, float* x) {
  activate();
  launch_scale_to_norm(n, sum_of_squares, threshold, always, x, limits_, stream_.get());
}

bool CudaBackend::all_finite(std::size_t n, const float* x) {
  if (n == 0) return true;
  activate();
  DL_CUDA_CALL(cudaMemsetAsync(non_finite_flag_, 0, sizeof(int), stream_.get()));
  launch_flag_non_finite(n, x, non_finite_flag_, limits_, stream_.get());
  DL_CUDA_CALL(cudaMemcpyAsync(host_flag_, non_finite_flag_, sizeof(int), cudaMemcpyDeviceToHost,
                               stream_.get()));
  DL_CUDA_CALL(cudaStreamSynchronize(stream_.get()));
  return *host_flag_ == 0;
}

// ---- pooling ----------------------------------------------------------------------------------

void CudaBackend::pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x,
                                 float* y, std::int32_t* argmax) {
  ops::check_geometry(g);
  activate();
  launch_pool2d_forward(g, type, x, y, argmax, limits_, stream_.get());
}

void CudaBackend::pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* /*x*/,
                                  const float* /*y*/, const float* dy, float* dx,
                                  const std::int32_t* argmax) {
  ops::check_geometry(g);
  activate();
  launch_pool2d_backward(g, type, dy, dx, argmax, limits_, stream_.get());
}

// ---- activations and the output layer ---------------------------------------------------------

void CudaBackend::activation_forward(Activation a, std::size_t rows, std::size_t cols,
                                     const float* x, float* y) {
  activate();
  launch_activation_forward(a, rows, cols, x, y, limits_, stream_.get());
}

void CudaBackend::add_activation_forward(Activation a, std::size_t n, const float* x, float* y) {
  activate();
  launch_add_activation_forward(a, n, x, y, limits_, stream_.get());
}

void CudaBackend::add_activation_backward(Activation a, std::size_t n, const float* x,
                                          const float* y, const float* term, float* dy) {
  activate();
  launch_add_activation_backward(a, n, x, y, term, dy, limits_, stream_.get());
}

void CudaBackend::activation_backward(Activation a, std::size_t rows, std::size_t cols,
                                      const float* x, const float* y, const float* dy, float* dx) {
  activate();
  launch_activation_backward(a, rows, cols, x, y, dy, dx, limits_, stream_.get());
}

void CudaBackend::output_loss(const OutputLoss& op, int n, int k, const float* z,
                              const std::int32_t* labels, float* out, float* dz, float grad_scale,
                              float* loss_sum) {
  DL_CHECK(n >= 0 && k > 0, "output_loss needs n >= 0 and k > 0, got n=" + std::to_string(n) +
                                " k=" + std::to_string(k));
  activate();
  launch_output_loss(op, n, k, z, labels, out, dz, grad_scale, loss_sum, partials_, limits_,
                     stream_.get());
}

void CudaBackend::count_correct(int n, int k, const float* out, const std::int32_t* labels,
                                float* count) {
  DL_CHECK(n >= 0 && k > 0, "count_correct needs n >= 0 and k > 0");
  activate();
  launch_count_correct(n, k, out, labels, count, limits_, stream_.get());
}

// ---- dropout ----------------------------------------------------------------------------------

void CudaBackend::dropout_forward(std::size_t n, float retain, std::uint64_t seed,
                                  std::uint64_t counter, const float* x, float* y, float* mask) {
  DL_CHECK(retain > 0.0f && retain <= 1.0f,
           "dropout retain probability must lie in (0, 1], got " + std::to_string(retain));
  activate();
  launch_dropout_forward(n, retain, seed, counter, x, y, mask, limits_, stream_.get());
}

void CudaBackend::dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx) {
  activate();
  launch_dropout_backward(n, mask, dy, dx, limits_, stream_.get());
}

// ---- batch normalization ----------------------------------------------------------------------

void CudaBackend::batchnorm_activation_forward_training(const BatchNormShape& s, Activation a,
                                                        float eps, float decay, const float* x,
                                                        const float* gamma, const float* beta,
                                                        float* y, float* running_mean,
                                                        float* running_var, float* save_mean,
                                                        float* save_inv_std, float* save_affine) {
  ops::check_shape(s);
  activate();
  launch_batchnorm_forward_training(s, a, eps, decay, x, gamma, beta, y, running_mean, running_var,
                                    save_mean, save_inv_std, save_affine, limits_, stream_.get());
}

void CudaBackend::batchnorm_activation_forward_inference(const BatchNormShape& s, Activation a,
                                                         float eps, const float* x,
                                                         const float* gamma, const float* beta,
                                                         const float* running_mean,
                                                         const float* running_var, float* y) {
  ops::check_shape(s);
  activate();
  launch_batchnorm_forward_inference(s, a, eps, x, gamma, beta, running_mean, running_var, y,
                                     limits_, stream_.get());
}

void CudaBackend::batchnorm_activation_backward(const BatchNormShape& s, Activation a,
                                                const float* x, const float* dy, const float* gamma,
                                                const float* save_mean, const float* save_inv_std,
                                                const float* save_affine, float* dx, float* dgamma,
                                                float* dbeta) {
  ops::check_shape(s);
  activate();
  launch_batchnorm_backward(s, a, x, dy, gamma, save_mean, save_inv_std, save_affine, dx, dgamma,
                            dbeta, limits_, stream_.get());
}

// ---- updaters ---------------------------------------------------------------------------------

void CudaBackend::updater_step(const UpdaterHyper& h, std::size_t n, float* params,
                               const float* grads, float* state, const UpdateTermRanges& terms) {
  activate();
  launch_updater_step(h, n, params, grads, state, terms, limits_, stream_.get());
}

}  // namespace dl::gpu
