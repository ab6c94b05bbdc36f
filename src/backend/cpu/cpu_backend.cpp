#include "backend/cpu/cpu_backend.hpp"

#include <cstdlib>
#include <cstring>

#include "backend/cpu/kernel_table.hpp"
#include "core/out_of_memory.hpp"

namespace dl {

namespace {
// Cache-line alignment for every buffer: SIMD loads never split a line and two workers' buffers
// never share one.
constexpr std::size_t kAlignment = 64;
}  // namespace

// The variant of the kernels this process runs (isa.hpp) is chosen on the first call.
const cpu::KernelTable& CpuBackend::kernels() const {
  return kernels_ != nullptr ? *kernels_ : cpu::selected_kernels();
}

void* CpuBackend::allocate_bytes(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw OutOfMemoryError(rounded, "host memory");
  return p;
}
void CpuBackend::free_bytes(void* p) {
  std::free(p);
}
void CpuBackend::upload(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;  // an empty buffer's pointer may be null, which memcpy must not get
  std::memcpy(dst, src, bytes);
}
void CpuBackend::download(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;  // an empty buffer's pointer may be null, which memcpy must not get
  std::memcpy(dst, src, bytes);
}
void CpuBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;  // an empty buffer's pointer may be null, which memcpy must not get
  std::memmove(dst, src, bytes);
}
void CpuBackend::gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                                std::size_t sample_bytes, const std::int32_t* indices, int n,
                                float* images, std::int32_t* batch_labels) {
  kernels().gather_samples(pixels, labels, sample_bytes, indices, n, images, batch_labels);
}
void CpuBackend::gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                                    const ops::SampleTransform& t, const std::int32_t* indices,
                                    int n, const float* channel_mean, const float* channel_std,
                                    float* images, std::int32_t* batch_labels) {
  kernels().gather_transformed(pixels, labels, t, indices, n, channel_mean, channel_std, images,
                               batch_labels);
}

void CpuBackend::fill(float* x, std::size_t n, float value) {
  for (std::size_t i = 0; i < n; ++i) x[i] = value;
}

void CpuBackend::scale(std::size_t n, float alpha, float* x) {
  kernels().scale(n, alpha, x);
}
void CpuBackend::axpy(std::size_t n, float alpha, const float* x, float* y) {
  kernels().axpy(n, alpha, x, y);
}
void CpuBackend::sum_of_squares(std::size_t n, const float* x, float* result) {
  kernels().sum_of_squares(n, x, result);
}
bool CpuBackend::all_finite(std::size_t n, const float* x) {
  return kernels().all_finite(n, x);
}
void CpuBackend::clip_values(std::size_t n, float limit, float* x) {
  kernels().clip_values(n, limit, x);
}
void CpuBackend::scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold,
                               bool always, float* x) {
  kernels().scale_to_norm(n, sum_of_squares, threshold, always, x);
}

void CpuBackend::dense_forward(int n, int in, int out, const float* x, const float* w,
                               const float* b, float* y) {
  kernels().dense_forward(n, in, out, x, w, b, y);
}
void CpuBackend::dense_backward(int n, int in, int out, const float* x, const float* w,
                                const float* dy, float* dx, float* dw, float* db) {
  kernels().dense_backward(n, in, out, x, w, dy, dx, dw, db);
}

std::size_t CpuBackend::conv2d_workspace_floats(const Conv2dGeometry& g) const {
  return kernels().conv2d_workspace_floats(g);
}
void CpuBackend::conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w,
                                const float* b, float* y, float* workspace) {
  kernels().conv2d_forward(g, x, w, b, y, workspace);
}
void CpuBackend::conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w,
                                 const float* dy, float* dx, float* dw, float* db,
                                 float* workspace) {
  kernels().conv2d_backward(g, x, w, dy, dx, dw, db, workspace);
}

void CpuBackend::conv2d_pool_forward(const ConvPool& op, const float* x, const float* w,
                                     const float* b, float* y, float* pooled, std::int32_t* argmax,
                                     float* workspace) {
  kernels().conv2d_pool_forward(op, x, w, b, y, pooled, argmax, workspace);
}
bool CpuBackend::conv2d_pool_writes_output(const ConvPool& op) const {
  // Its backward takes pooling winners from argmax: y only for an activation's gradient.
  return ops::conv_pool_backward_reads_output(op);
}
// With dx the ops run one after another (conv2d_pool.hpp says why).
void CpuBackend::conv2d_pool_backward(const ConvPool& op, const float* x, const float* w,
                                      const float* y, const float* pooled, const float* dpooled,
                                      const std::int32_t* argmax, float* dy, float* dx, float* dw,
                                      float* db, float* workspace) {
  if (dx != nullptr) {
    return Backend::conv2d_pool_backward(op, x, w, y, pooled, dpooled, argmax, dy, dx, dw, db,
                                         workspace);
  }
  // dy is not written: each weight-gradient task makes its samples' dy in its own buffer.
  kernels().conv2d_pool_weight_gradient(op, x, w, y, pooled, dpooled, argmax, dw, db, workspace);
}

void CpuBackend::pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                                std::int32_t* argmax) {
  kernels().pool2d_forward(g, type, x, y, argmax);
}
void CpuBackend::pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x,
                                 const float* y, const float* dy, float* dx,
                                 const std::int32_t* argmax) {
  kernels().pool2d_backward(g, type, x, y, dy, dx, argmax);
}

void CpuBackend::activation_forward(Activation a, std::size_t rows, std::size_t cols,
                                    const float* x, float* y) {
  kernels().activation_forward(a, rows, cols, x, y);
}
void CpuBackend::add_activation_forward(Activation a, std::size_t n, const float* x, float* y) {
  kernels().add_activation_forward(a, n, x, y);
}
void CpuBackend::add_activation_backward(Activation a, std::size_t n, const float* x,
                                         const float* y, const float* term, float* dy) {
  kernels().add_activation_backward(a, n, x, y, term, dy);
}
void CpuBackend::activation_backward(Activation a, std::size_t rows, std::size_t cols,
                                     const float* x, const float* y, const float* dy, float* dx) {
  kernels().activation_backward(a, rows, cols, x, y, dy, dx);
}

void CpuBackend::output_loss(const OutputLoss& op, int n, int k, const float* z,
                             const std::int32_t* labels, float* out, float* dz, float grad_scale,
                             float* loss_sum) {
  kernels().output_loss(op, n, k, z, labels, out, dz, grad_scale, loss_sum);
}

void CpuBackend::dropout_forward(std::size_t n, float retain, std::uint64_t seed,
                                 std::uint64_t counter, const float* x, float* y, float* mask) {
  kernels().dropout_forward(n, retain, seed, counter, x, y, mask);
}
void CpuBackend::dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx) {
  kernels().dropout_backward(n, mask, dy, dx);
}

void CpuBackend::batchnorm_activation_forward_training(const BatchNormShape& s, Activation a,
                                                       float eps, float decay, const float* x,
                                                       const float* gamma, const float* beta,
                                                       float* y, float* running_mean,
                                                       float* running_var, float* save_mean,
                                                       float* save_inv_std, float* save_affine) {
  kernels().batchnorm_forward_training(s, a, eps, decay, x, gamma, beta, y, running_mean,
                                       running_var, save_mean, save_inv_std, save_affine);
}
void CpuBackend::batchnorm_activation_forward_inference(const BatchNormShape& s, Activation a,
                                                        float eps, const float* x,
                                                        const float* gamma, const float* beta,
                                                        const float* running_mean,
                                                        const float* running_var, float* y) {
  kernels().batchnorm_forward_inference(s, a, eps, x, gamma, beta, running_mean, running_var, y);
}
void CpuBackend::batchnorm_activation_backward(const BatchNormShape& s, Activation a,
                                               const float* x, const float* dy, const float* gamma,
                                               const float* save_mean, const float* save_inv_std,
                                               const float* save_affine, float* dx, float* dgamma,
                                               float* dbeta) {
  kernels().batchnorm_backward(s, a, x, dy, gamma, save_mean, save_inv_std, save_affine, dx, dgamma,
                               dbeta);
}

void CpuBackend::updater_step(const UpdaterHyper& h, std::size_t n, float* params,
                              const float* grads, float* state, const UpdateTermRanges& terms) {
  kernels().updater_step(h, n, params, grads, state, terms);
}

}  // namespace dl
