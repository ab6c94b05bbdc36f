// A Backend whose ops are the CUDA kernels on the host grid, for the op tests over backends
// (tests/backend/backend_op_tests.cpp): memory is host memory, every op with a kernel of its own
// launches it through its launcher (with the host-side steps CudaBackend takes around it), and
// the products that CudaBackend leaves to cuDNN and cuBLAS (convolution and dense y, dx, dw),
// which cannot run here, are the CPU backend's; their bias and bias gradient are the kernels'.
// With a 16-bit format (HALF, BFLOAT16) the products round their inputs (and cuDNN's forward its
// output) through the cast kernels as CudaBackend does around cuDNN and cuBLAS.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "launch_limits.hpp"
#include "ops/precision_cast.hpp"

namespace dl::test {

class HostGridBackend : public CpuBackend {
 public:
  explicit HostGridBackend(gpu::LaunchLimits limits,
                           std::optional<gpu::HalfFormat> format = std::nullopt);
  std::string name() const override;

  void fill(float* x, std::size_t n, float value) override;
  void gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                      std::size_t sample_bytes, const std::int32_t* indices, int n, float* images,
                      std::int32_t* batch_labels) override;
  void gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                          const ops::SampleTransform& t, const std::int32_t* indices, int n,
                          const float* channel_mean, const float* channel_std, float* images,
                          std::int32_t* batch_labels) override;
  void scale(std::size_t n, float alpha, float* x) override;
  void axpy(std::size_t n, float alpha, const float* x, float* y) override;
  void sum_of_squares(std::size_t n, const float* x, float* result) override;
  bool all_finite(std::size_t n, const float* x) override;
  void clip_values(std::size_t n, float limit, float* x) override;
  void scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold, bool always,
                     float* x) override;
  void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                     float* y) override;
  void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                      float* dx, float* dw, float* db) override;
  void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                      float* y, float* workspace) override;
  void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db, float* workspace) override;
  // The CUDA backend's fused convolution and pooling: the Backend's default, the ops above one
  // after another (not the CpuBackend's fusion, which would bypass them).
  void conv2d_pool_forward(const ConvPool& op, const float* x, const float* w, const float* b,
                           float* y, float* pooled, std::int32_t* argmax,
                           float* workspace) override {
    Backend::conv2d_pool_forward(op, x, w, b, y, pooled, argmax, workspace);
  }
  bool conv2d_pool_writes_output(const ConvPool& op) const override {
    return Backend::conv2d_pool_writes_output(op);
  }
  void conv2d_pool_backward(const ConvPool& op, const float* x, const float* w, const float* y,
                            const float* pooled, const float* dpooled, const std::int32_t* argmax,
                            float* dy, float* dx, float* dw, float* db, float* workspace) override {
    Backend::conv2d_pool_backward(op, x, w, y, pooled, dpooled, argmax, dy, dx, dw, db, workspace);
  }
  void pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                      std::int32_t* argmax) override;
  void pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x, const float* y,
                       const float* dy, float* dx, const std::int32_t* argmax) override;
  void activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                          float* y) override;
  void add_activation_forward(Activation a, std::size_t n, const float* x, float* y) override;
  void add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                               const float* term, float* dy) override;
  void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                           const float* y, const float* dy, float* dx) override;
  void output_loss(const OutputLoss& op, int n, int k, const float* z,
                   const std::int32_t* labels, float* out, float* dz, float grad_scale,
                   float* loss_sum) override;
  void count_correct(int n, int k, const float* out, const std::int32_t* labels,
                     float* count) override;
  void dropout_forward(std::size_t n, float retain, std::uint64_t seed, std::uint64_t counter,
                       const float* x, float* y, float* mask) override;
  void dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx) override;
  void batchnorm_activation_forward_training(const BatchNormShape& s, Activation a, float eps,
                                             float decay, const float* x, const float* gamma,
                                             const float* beta, float* y, float* running_mean,
                                             float* running_var, float* save_mean,
                                             float* save_inv_std, float* save_affine) override;
  void batchnorm_activation_forward_inference(const BatchNormShape& s, Activation a, float eps,
                                              const float* x, const float* gamma, const float* beta,
                                              const float* running_mean, const float* running_var,
                                              float* y) override;
  void batchnorm_activation_backward(const BatchNormShape& s, Activation a, const float* x,
                                     const float* dy, const float* gamma, const float* save_mean,
                                     const float* save_inv_std, const float* save_affine, float* dx,
                                     float* dgamma, float* dbeta) override;
  void updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                    float* state, const UpdateTermRanges& terms) override;

 private:
  // v[0..n) rounded to format_ and widened back by the cast kernels (a copy without a format).
  std::vector<float> through_format(const float* v, std::size_t n);

  gpu::LaunchLimits limits_;
  std::optional<gpu::HalfFormat> format_;
  std::vector<double> partials_;  // per-block partial sums, limits.max_grid of them
  void backward_by_columns(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                           float* dx, float* dw);

  std::vector<double> sum_partials_;  // the bias gradients' chunk totals
};

}  // namespace dl::test
