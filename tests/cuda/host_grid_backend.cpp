// HostGridBackend: each op as CudaBackend (cuda/cuda_backend.cpp) queues it, with the host grid
// as the device and the stream a null name.
#include "host_grid_backend.hpp"

#include <algorithm>
#include <vector>

#include "ops/activation.hpp"
#include "ops/augment.hpp"
#include "ops/batchnorm.hpp"
#include "ops/bias_sums.hpp"
#include "ops/conv2d.hpp"
#include "ops/conv2d_columns.hpp"
#include "ops/dense.hpp"
#include "ops/dropout.hpp"
#include "ops/gather.hpp"
#include "ops/gradient_clip.hpp"
#include "ops/output_loss.hpp"
#include "ops/pooling.hpp"
#include "ops/precision_cast.hpp"
#include "ops/updater.hpp"
#include "ops/vector_ops.hpp"

namespace dl::test {

namespace {

constexpr cudaStream_t kStream = nullptr;

std::size_t input_count(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels * g.in_height * g.in_width;
}
std::size_t weight_count(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height *
         g.kernel_width;
}
std::size_t output_count(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}

}  // namespace

HostGridBackend::HostGridBackend(gpu::LaunchLimits limits, std::optional<gpu::HalfFormat> format)
    : limits_(limits),
      format_(format),
      partials_(static_cast<std::size_t>(std::max(limits.max_grid, 1))),
      sum_partials_(gpu::kBiasSumPartials) {}

std::string HostGridBackend::name() const {
  const std::string format = !format_                             ? ""
                             : *format_ == gpu::HalfFormat::kHalf ? ", HALF products"
                                                                  : ", BFLOAT16 products";
  return "cuda kernels on the host grid (grid " + std::to_string(limits_.max_grid) + ", block " +
         std::to_string(limits_.max_block) + format + ")";
}

void HostGridBackend::fill(float* x, std::size_t n, float value) {
  gpu::launch_fill(x, n, value, limits_, kStream);
}
void HostGridBackend::gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                                     std::size_t sample_bytes, const std::int32_t* indices, int n,
                                     float* images, std::int32_t* batch_labels) {
  gpu::launch_gather_samples(pixels, labels, sample_bytes, indices, n, images, batch_labels,
                             limits_, kStream);
}
void HostGridBackend::gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                                         const ops::SampleTransform& t, const std::int32_t* indices,
                                         int n, const float* channel_mean, const float* channel_std,
                                         float* images, std::int32_t* batch_labels) {
  gpu::launch_gather_transformed(pixels, labels, t, indices, n, channel_mean, channel_std, images,
                                 batch_labels, limits_, kStream);
}
void HostGridBackend::scale(std::size_t n, float alpha, float* x) {
  gpu::launch_scale(n, alpha, x, limits_, kStream);
}
void HostGridBackend::axpy(std::size_t n, float alpha, const float* x, float* y) {
  gpu::launch_axpy(n, alpha, x, y, limits_, kStream);
}
void HostGridBackend::sum_of_squares(std::size_t n, const float* x, float* result) {
  gpu::launch_sum_of_squares(n, x, result, partials_.data(), limits_, kStream);
}
bool HostGridBackend::all_finite(std::size_t n, const float* x) {
  int flag = 0;
  gpu::launch_flag_non_finite(n, x, &flag, limits_, kStream);
  return flag == 0;
}
void HostGridBackend::clip_values(std::size_t n, float limit, float* x) {
  gpu::launch_clip_values(n, limit, x, limits_, kStream);
}
void HostGridBackend::scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold,
                                    bool always, float* x) {
  gpu::launch_scale_to_norm(n, sum_of_squares, threshold, always, x, limits_, kStream);
}

// ---- products: the CPU's in float32, standing in for cuBLAS and cuDNN ------------------------
// With a 16-bit format the products read their inputs rounded to it by the cast kernels, and the
// convolution's y is rounded once more, where cuDNN writes it in 16-bit (the backward pass by
// columns accumulates and writes float32).

std::vector<float> HostGridBackend::through_format(const float* v, std::size_t n) {
  if (!format_) return std::vector<float>(v, v + n);
  std::vector<std::uint16_t> bits(n);
  std::vector<float> widened(n);
  gpu::launch_cast_to_half_format(*format_, n, v, bits.data(), limits_, kStream);
  gpu::launch_cast_to_float(*format_, n, bits.data(), widened.data(), limits_, kStream);
  return widened;
}

// CudaBackend broadcasts the bias into y and lets the GEMM accumulate onto it; here the product
// (the CPU's, without bias) is added by the axpy kernel.
void HostGridBackend::dense_forward(int n, int in, int out, const float* x, const float* w,
                                    const float* b, float* y) {
  const std::size_t size = static_cast<std::size_t>(n) * out;
  std::vector<float> product(size), zero_bias(static_cast<std::size_t>(out), 0.0f);
  const auto x16 = through_format(x, static_cast<std::size_t>(n) * in);
  const auto w16 = through_format(w, static_cast<std::size_t>(in) * out);
  CpuBackend::dense_forward(n, in, out, x16.data(), w16.data(), zero_bias.data(), product.data());
  gpu::launch_broadcast_bias_rows(n, out, b, y, limits_, kStream);
  gpu::launch_axpy(size, 1.0f, product.data(), y, limits_, kStream);
}
void HostGridBackend::dense_backward(int n, int in, int out, const float* x, const float* w,
                                     const float* dy, float* dx, float* dw, float* db) {
  const auto x16 = through_format(x, static_cast<std::size_t>(n) * in);
  const auto w16 = through_format(w, static_cast<std::size_t>(in) * out);
  const auto dy16 = through_format(dy, static_cast<std::size_t>(n) * out);
  CpuBackend::dense_backward(n, in, out, x16.data(), w16.data(), dy16.data(), dx, dw, db);
  gpu::launch_column_sums(n, out, dy, db, sum_partials_.data(), limits_, kStream);
}

void HostGridBackend::conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w,
                                     const float* b, float* y, float* workspace) {
  const int spatial = g.out_height * g.out_width;
  std::vector<float> zero_bias(static_cast<std::size_t>(g.out_channels), 0.0f);
  const auto x16 = through_format(x, input_count(g));
  const auto w16 = through_format(w, weight_count(g));
  CpuBackend::conv2d_forward(g, x16.data(), w16.data(), zero_bias.data(), y, workspace);
  if (!format_) {
    gpu::launch_add_channel_bias(g.batch, g.out_channels, spatial, b, y, limits_, kStream);
    return;
  }
  std::vector<std::uint16_t> y16(output_count(g));
  gpu::launch_cast_to_half_format(*format_, y16.size(), y, y16.data(), limits_, kStream);
  gpu::launch_add_channel_bias_from_half_format(*format_, g.batch, g.out_channels, spatial,
                                                y16.data(), b, y, limits_, kStream);
}
void HostGridBackend::conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w,
                                      const float* dy, float* dx, float* dw, float* db,
                                      float* /*workspace*/) {
  const auto x16 = through_format(x, input_count(g));
  const auto w16 = through_format(w, weight_count(g));
  const auto dy16 = through_format(dy, output_count(g));
  gpu::launch_channel_sums(g.batch, g.out_channels, g.out_height * g.out_width, dy, db,
                           sum_partials_.data(), limits_, kStream);
  backward_by_columns(g, x16.data(), w16.data(), dy16.data(), dx, dw);
}

// The CUDA backend's backward pass by columns with its kernels and chunks; the products that
// cuBLAS computes there are plain loops here (each chunk's weight gradient added in chunk order).
void HostGridBackend::backward_by_columns(const Conv2dGeometry& g, const float* x, const float* w,
                                          const float* dy, float* dx, float* dw) {
  const gpu::ColumnChunks chunks = gpu::column_chunks(g);
  std::vector<float> columns(chunks.column_floats), channel_major(chunks.gradient_floats);
  const std::size_t window =
      static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  const std::size_t outputs = static_cast<std::size_t>(g.out_height) * g.out_width;
  const auto out = static_cast<std::size_t>(g.out_channels);
  std::fill(dw, dw + window * out, 0.0f);
  for (int first = 0; first < g.batch; first += chunks.samples) {
    const int samples = std::min(chunks.samples, g.batch - first);
    gpu::launch_convolution_columns(g, first, samples, x, columns.data(), limits_, kStream);
    gpu::launch_channel_major(g, first, samples, dy, channel_major.data(), limits_, kStream);
    const std::size_t k = static_cast<std::size_t>(samples) * outputs;
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t r = 0; r < window; ++r) {
        float sum = 0.0f;
        for (std::size_t q = 0; q < k; ++q) sum += columns[r * k + q] * channel_major[o * k + q];
        dw[o * window + r] += sum;
      }
    if (dx == nullptr) continue;
    for (std::size_t r = 0; r < window; ++r)  // the columns' gradient, in the columns' place
      for (std::size_t q = 0; q < k; ++q) {
        float sum = 0.0f;
        for (std::size_t o = 0; o < out; ++o) sum += w[o * window + r] * channel_major[o * k + q];
        columns[r * k + q] = sum;
      }
    gpu::launch_columns_to_image(g, first, samples, columns.data(), dx, limits_, kStream);
  }
}

void HostGridBackend::pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x,
                                     float* y, std::int32_t* argmax) {
  gpu::launch_pool2d_forward(g, type, x, y, argmax, limits_, kStream);
}
void HostGridBackend::pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float*,
                                      const float*, const float* dy, float* dx,
                                      const std::int32_t* argmax) {
  gpu::launch_pool2d_backward(g, type, dy, dx, argmax, limits_, kStream);
}

void HostGridBackend::activation_forward(Activation a, std::size_t rows, std::size_t cols,
                                         const float* x, float* y) {
  gpu::launch_activation_forward(a, rows, cols, x, y, limits_, kStream);
}
void HostGridBackend::add_activation_forward(Activation a, std::size_t n, const float* x,
                                             float* y) {
  gpu::launch_add_activation_forward(a, n, x, y, limits_, kStream);
}
void HostGridBackend::add_activation_backward(Activation a, std::size_t n, const float* x,
                                              const float* y, const float* term, float* dy) {
  gpu::launch_add_activation_backward(a, n, x, y, term, dy, limits_, kStream);
}
void HostGridBackend::activation_backward(Activation a, std::size_t rows, std::size_t cols,
                                          const float* x, const float* y, const float* dy,
                                          float* dx) {
  gpu::launch_activation_backward(a, rows, cols, x, y, dy, dx, limits_, kStream);
}
void HostGridBackend::output_loss(const OutputLoss& op, int n, int k, const float* z,
                                  const std::int32_t* labels, float* out, float* dz,
                                  float grad_scale, float* loss_sum) {
  gpu::launch_output_loss(op, n, k, z, labels, out, dz, grad_scale, loss_sum,
                          partials_.data(), limits_, kStream);
}
void HostGridBackend::count_correct(int n, int k, const float* out, const std::int32_t* labels,
                                    float* count) {
  gpu::launch_count_correct(n, k, out, labels, count, limits_, kStream);
}

void HostGridBackend::dropout_forward(std::size_t n, float retain, std::uint64_t seed,
                                      std::uint64_t counter, const float* x, float* y,
                                      float* mask) {
  gpu::launch_dropout_forward(n, retain, seed, counter, x, y, mask, limits_, kStream);
}
void HostGridBackend::dropout_backward(std::size_t n, const float* mask, const float* dy,
                                       float* dx) {
  gpu::launch_dropout_backward(n, mask, dy, dx, limits_, kStream);
}

void HostGridBackend::batchnorm_activation_forward_training(
    const BatchNormShape& s, Activation a, float eps, float decay, const float* x,
    const float* gamma, const float* beta, float* y, float* running_mean, float* running_var,
    float* save_mean, float* save_inv_std, float* save_affine) {
  gpu::launch_batchnorm_forward_training(s, a, eps, decay, x, gamma, beta, y, running_mean,
                                         running_var, save_mean, save_inv_std, save_affine, limits_,
                                         kStream);
}

void HostGridBackend::batchnorm_activation_forward_inference(const BatchNormShape& s, Activation a,
                                                             float eps, const float* x,
                                                             const float* gamma, const float* beta,
                                                             const float* running_mean,
                                                             const float* running_var, float* y) {
  gpu::launch_batchnorm_forward_inference(s, a, eps, x, gamma, beta, running_mean, running_var, y,
                                          limits_, kStream);
}

void HostGridBackend::batchnorm_activation_backward(const BatchNormShape& s, Activation a,
                                                    const float* x, const float* dy,
                                                    const float* gamma, const float* save_mean,
                                                    const float* save_inv_std,
                                                    const float* save_affine, float* dx,
                                                    float* dgamma, float* dbeta) {
  gpu::launch_batchnorm_backward(s, a, x, dy, gamma, save_mean, save_inv_std, save_affine, dx,
                                 dgamma, dbeta, limits_, kStream);
}

void HostGridBackend::updater_step(const UpdaterHyper& h, std::size_t n, float* params,
                                   const float* grads, float* state,
                                   const UpdateTermRanges& terms) {
  gpu::launch_updater_step(h, n, params, grads, state, terms, limits_, kStream);
}

}  // namespace dl::test
