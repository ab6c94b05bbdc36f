// The CPU backend: a CBLAS for the matrix products (OpenBLAS by default; blas_control.hpp),
// our own loops (written to auto-vectorize) for the rest, in the variant for this CPU's x86-64
// level that isa.hpp picks (kernel_table.hpp). It is the embedded default: every feature works on
// it.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.hpp"
#include "backend/cpu/blas_control.hpp"

namespace dl {

namespace cpu {
struct KernelTable;  // kernel_table.hpp
}

// Threads for each of the CPU backend's ops (and for OpenBLAS outside them), process-wide, set by
// the trainer before workers start: the thread plan's threads per worker.
void set_cpu_threads(int threads);
int cpu_threads();

class CpuBackend : public Backend {
 public:
  // The variant of the kernels this process runs, which isa.hpp picks on the first op.
  CpuBackend() = default;
  // Another compiled variant's kernels (kernel_table.hpp), which the caller has checked this CPU
  // runs: the op tests run every op on each variant besides the picked one.
  explicit CpuBackend(const cpu::KernelTable& kernels) : kernels_(&kernels) {}

  std::string name() const override { return "cpu"; }
  BackendKind kind() const override { return BackendKind::kCpu; }

  void* allocate_bytes(std::size_t bytes) override;
  void free_bytes(void* p) override;
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill(float* x, std::size_t n, float value) override;
  void synchronize() override {}
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

  std::size_t conv2d_workspace_floats(const Conv2dGeometry& g) const override;
  void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                      float* y, float* workspace) override;
  void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db, float* workspace) override;

  void conv2d_pool_forward(const ConvPool& op, const float* x, const float* w, const float* b,
                           float* y, float* pooled, std::int32_t* argmax,
                           float* workspace) override;
  bool conv2d_pool_writes_output(const ConvPool& op) const override;
  void conv2d_pool_backward(const ConvPool& op, const float* x, const float* w, const float* y,
                            const float* pooled, const float* dpooled, const std::int32_t* argmax,
                            float* dy, float* dx, float* dw, float* db, float* workspace) override;

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
  const cpu::KernelTable& kernels() const;

  const cpu::KernelTable* kernels_ = nullptr;  // null: the picked variant's
};

}  // namespace dl
