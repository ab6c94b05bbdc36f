// The Backend interface: every operation a layer, an updater or the trainer needs, on memory that
// the backend owns. Layers never touch raw device memory; they call these ops. The CPU backend
// (src/backend/cpu/) implements them with OpenBLAS and plain loops, the CUDA backend (cuda/) with
// cuDNN, cuBLAS and its own kernels. No CUDA type appears here.
//
// Conventions shared by all ops:
//  - float32, batch-major NCHW activations; convolution weights are [out][in][kh][kw];
//    dense weights are [in][out] (row-major), so y = x * w + b.
//  - Outputs are overwritten, never accumulated (gradients included).
//  - Pointers come from this backend's allocate_*; host pointers only where a name says host.
//  - No op allocates: buffers and workspaces are allocated when a model is bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/ops/augment.hpp"
#include "backend/ops/batchnorm.hpp"
#include "backend/ops/conv2d.hpp"
#include "backend/ops/output_loss.hpp"
#include "backend/ops/updater.hpp"
#include "core/kinds.hpp"

namespace dl {

// Work a backend recorded once and can run again as one launch (a CUDA graph on a GPU).
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  // Queues the recorded ops again, with the pointers and scalar arguments they were recorded with.
  virtual void replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual BackendKind kind() const = 0;

  // ---- memory -----------------------------------------------------------------------------
  virtual void* allocate_bytes(std::size_t bytes) = 0;
  virtual void free_bytes(void* p) = 0;
  float* allocate_floats(std::size_t n) {
    return static_cast<float*>(allocate_bytes(n * sizeof(float)));
  }
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // `rows` runs of `row_floats` floats, from src every `src_stride` floats to dst every
  // `dst_stride` (a channel concatenation and its gradient). One copy per row, unless a backend
  // has a strided copy of its own.
  virtual void copy_rows(std::size_t rows, std::size_t row_floats, const float* src,
                         std::size_t src_stride, float* dst, std::size_t dst_stride) {
    for (std::size_t r = 0; r < rows; ++r)
      copy(dst + r * dst_stride, src + r * src_stride, row_floats * sizeof(float));
  }
  virtual void fill(float* x, std::size_t n, float value) = 0;
  // Waits until every op issued so far has finished (a no-op on the CPU).
  virtual void synchronize() = 0;
  // Lines describing the backend's memory caches (hits, misses, peaks) for the end of a run;
  // empty when the backend keeps none (the CPU).
  virtual std::string memory_report() const { return {}; }
  // The algorithms chosen for the convolutions sized so far (conv2d_workspace_floats), one
  // "geometry: algorithms" entry each, "; "-separated, for checkpoints to record; empty where
  // there is no choice (the CPU).
  virtual std::string convolution_algorithms() const { return {}; }

  // ---- data ---------------------------------------------------------------------------------
  // Builds a batch from a data set held in this backend's memory: for i < n, image i is the
  // sample_bytes pixels at pixels + indices[i] * sample_bytes, each byte b written as
  // float(b) / 255.0f (one IEEE float division, round to nearest: exactly Dataset::gather's
  // value, so a batch gathered here is bit-identical to one gathered on the host), and
  // batch_labels[i] = labels[indices[i]]. Every index must lie within the data set (unchecked:
  // the caller's epoch plan guarantees it).
  virtual void gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                              std::size_t sample_bytes, const std::int32_t* indices, int n,
                              float* images, std::int32_t* batch_labels) = 0;
  // gather_samples with the input pipeline (the contract: backend/ops/augment.hpp): image i is
  // sample indices[i] cropped and flipped by augment_draw(t, indices[i]) when t.augment, then
  // normalized with channel_mean[c] and channel_std[c] (t.channels values each in this backend's
  // memory; unread without t.normalize). Bit-identical on every backend and to the host loader
  // (Dataset::gather_training), so the data path never changes a result.
  virtual void gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                                  const ops::SampleTransform& t, const std::int32_t* indices, int n,
                                  const float* channel_mean, const float* channel_std,
                                  float* images, std::int32_t* batch_labels) = 0;

  // ---- vector arithmetic over flat buffers --------------------------------------------------
  virtual void scale(std::size_t n, float alpha, float* x) = 0;                   // x *= a
  virtual void axpy(std::size_t n, float alpha, const float* x, float* y) = 0;    // y += a x
  virtual void sum_of_squares(std::size_t n, const float* x, float* result) = 0;  // result[0]
  // True when every value is finite; reads a device scalar or buffer back to the host.
  virtual bool all_finite(std::size_t n, const float* x) = 0;

  // ---- gradient normalization (the math: gradient_clip_math.hpp) ---------------------------
  // x[i] = clip_value(x[i], limit), limit > 0.
  virtual void clip_values(std::size_t n, float limit, float* x) = 0;
  // x[i] *= norm_scale_factor(sum_of_squares[0], threshold, always). sum_of_squares is a backend
  // scalar (written by sum_of_squares) read where it lies: the step never waits on the host.
  virtual void scale_to_norm(std::size_t n, const float* sum_of_squares, float threshold,
                             bool always, float* x) = 0;

  // ---- dense ------------------------------------------------------------------------------
  // y[n x out] = x[n x in] * w[in x out] + b[out]
  virtual void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                             float* y) = 0;
  // dw = x^T dy, db = column sums of dy; dx = dy w^T unless dx is null (first layer).
  virtual void dense_backward(int n, int in, int out, const float* x, const float* w,
                              const float* dy, float* dx, float* dw, float* db) = 0;

  // ---- convolution ------------------------------------------------------------------------
  virtual std::size_t conv2d_workspace_floats(const Conv2dGeometry& g) const = 0;
  // y = conv(x, w) + b (cross-correlation, as cuDNN and DL4J compute it).
  virtual void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w,
                              const float* b, float* y, float* workspace) = 0;
  // dw, db always; dx unless null. `workspace` holds at least conv2d_workspace_floats(g) floats
  // (for this or a larger batch); a model shares one among all its layers, so no backend may keep
  // anything in it from one call to the next.
  virtual void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w,
                               const float* dy, float* dx, float* dw, float* db,
                               float* workspace) = 0;

  // ---- a convolution, its activation and the pooling after it, fused where it pays ---------
  // y: the activation's output (the pooling's input), kept for backward where
  // conv2d_pool_writes_output says so, else left unwritten. By default the three ops one after
  // another; the CPU backend pools each task's samples as soon as the convolution has them, while
  // they are in that core's cache.
  virtual void conv2d_pool_forward(const ConvPool& op, const float* x, const float* w,
                                   const float* b, float* y, float* pooled, std::int32_t* argmax,
                                   float* workspace) {
    ops::check_conv_pool(op);
    conv2d_forward(op.conv, x, w, b, y, workspace);
    if (op.activation != Activation::kIdentity) {
      activation_forward(op.activation, op.conv.batch, ops::conv_output_per_sample(op.conv), y, y);
    }
    pool2d_forward(op.pool, op.pooling, y, pooled, argmax);
  }
  // Whether conv2d_pool_forward writes y: by default always; the CPU backend only where its
  // backward reads y (an activation's gradient), and otherwise keeps each task's outputs in the
  // task's cache for its pooling alone.
  virtual bool conv2d_pool_writes_output(const ConvPool& /*op*/) const { return true; }
  // From the pooled output's gradient dpooled: dw and db, and dx unless null. dy (y's size) is
  // the backend's for the convolution output's gradient; nothing may read it afterwards (the
  // CPU leaves it unwritten without dx).
  virtual void conv2d_pool_backward(const ConvPool& op, const float* x, const float* w,
                                    const float* y, const float* pooled, const float* dpooled,
                                    const std::int32_t* argmax, float* dy, float* dx, float* dw,
                                    float* db, float* workspace) {
    ops::check_conv_pool(op);
    pool2d_backward(op.pool, op.pooling, y, pooled, dpooled, dy, argmax);
    if (op.activation != Activation::kIdentity) {
      activation_backward(op.activation, op.conv.batch, ops::conv_output_per_sample(op.conv),
                          nullptr, y, dy, dy);
    }
    conv2d_backward(op.conv, x, w, dy, dx, dw, db, workspace);
  }

  // ---- pooling ----------------------------------------------------------------------------
  // `argmax` has one int32 per output element; max pooling records the winning input there.
  // Average pooling divides by kernel_height * kernel_width (padding counts as zeros).
  virtual void pool2d_forward(const Pool2dGeometry& g, PoolingType type, const float* x, float* y,
                              std::int32_t* argmax) = 0;
  virtual void pool2d_backward(const Pool2dGeometry& g, PoolingType type, const float* x,
                               const float* y, const float* dy, float* dx,
                               const std::int32_t* argmax) = 0;

  // ---- activations ------------------------------------------------------------------------
  // Elementwise over rows*cols values; softmax is taken per row over `cols`. In place allowed.
  virtual void activation_forward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                                  float* y) = 0;
  // y = act(y + x) over n values (a elementwise or the identity; y + x is axpy's value): the last
  // term of the residual sum and its activation in one pass instead of two.
  virtual void add_activation_forward(Activation a, std::size_t n, const float* x, float* y) = 0;
  // Its gradient with one more term of dy: dy = the gradient at (x, y) of dy + term, in place (x
  // as activation_backward takes it; dy + term is axpy's value): the residual sum's activation
  // gradient and the last term of the gradient sum at its output, in one pass instead of two.
  virtual void add_activation_backward(Activation a, std::size_t n, const float* x, const float* y,
                                       const float* term, float* dy) = 0;
  // dx from the forward input x, output y and dy (backend/ops/activation.hpp): x may be null
  // unless ops::activation_reads_input(a). In place (dx == dy) allowed.
  virtual void activation_backward(Activation a, std::size_t rows, std::size_t cols, const float* x,
                                   const float* y, const float* dy, float* dx) = 0;

  // ---- output layer: activation + loss, fused -------------------------------------------
  // z: [n x k] pre-activations; labels: n class indices in [0, k). Writes out = act(z),
  // loss_sum[0] = sum over the n samples of the per-sample loss (left on the device), and
  // dz = grad_scale * d(sum of losses)/dz. DL4J's definitions: NLL == MCXENT = -sum y log(a);
  // MSE = sum (a - y)^2 / k with y the one-hot label; softmax with cross-entropy may smooth y
  // (backend/ops/output_loss.hpp).
  virtual void output_loss(const OutputLoss& op, int n, int k, const float* z,
                           const std::int32_t* labels, float* out, float* dz, float grad_scale,
                           float* loss_sum) = 0;

  // count[0] = the rows i < n of out [n x k] whose first largest value is at labels[i] (the
  // prediction Evaluation counts), as a float left in backend memory: a training round's
  // accuracy. The default reads both back and counts on the host, which is free where backend
  // memory is host memory; a device backend overrides it to keep the step off the host.
  virtual void count_correct(int n, int k, const float* out, const std::int32_t* labels,
                             float* count) {
    std::vector<float> rows(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    std::vector<std::int32_t> truth(static_cast<std::size_t>(n));
    download(rows.data(), out, rows.size() * sizeof(float));
    download(truth.data(), labels, truth.size() * sizeof(std::int32_t));
    float correct = 0.0f;
    for (std::size_t i = 0; i < truth.size(); ++i) {
      const float* row = rows.data() + i * static_cast<std::size_t>(k);
      int best = 0;
      for (int j = 1; j < k; ++j)
        if (row[j] > row[best]) best = j;
      if (best == truth[i]) correct += 1.0f;
    }
    upload(count, &correct, sizeof(float));
  }

  // ---- dropout (inverted): keep with probability `retain`, scale kept values by 1/retain -----
  // Element i's keep decision is a pure function of (seed, counter, i), so CPU and GPU agree and
  // a resumed run draws the same masks. mask[i] is 0 or 1/retain.
  virtual void dropout_forward(std::size_t n, float retain, std::uint64_t seed,
                               std::uint64_t counter, const float* x, float* y, float* mask) = 0;
  virtual void dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx) = 0;

  // ---- batch normalization, with the elementwise activation after it fused --------------------
  // Training: normalizes with the batch statistics, saves mean and 1/sqrt(var+eps) per channel,
  // and updates running = decay * running + (1 - decay) * batch (variance unbiased). y = act(x *
  // scale + shift), the scale and shift saved in save_affine (2 * channels floats: required unless
  // a is the identity) for the backward pass, which applies act's gradient to dy itself
  // (backend/ops/batchnorm.hpp): the activation costs no pass and no tensor of its own.
  virtual void batchnorm_activation_forward_training(const BatchNormShape& s, Activation a,
                                                     float eps, float decay, const float* x,
                                                     const float* gamma, const float* beta,
                                                     float* y, float* running_mean,
                                                     float* running_var, float* save_mean,
                                                     float* save_inv_std, float* save_affine) = 0;
  virtual void batchnorm_activation_forward_inference(const BatchNormShape& s, Activation a,
                                                      float eps, const float* x, const float* gamma,
                                                      const float* beta, const float* running_mean,
                                                      const float* running_var, float* y) = 0;
  // dy: the gradient w.r.t. the activation's output.
  virtual void batchnorm_activation_backward(const BatchNormShape& s, Activation a, const float* x,
                                             const float* dy, const float* gamma,
                                             const float* save_mean, const float* save_inv_std,
                                             const float* save_affine, float* dx, float* dgamma,
                                             float* dbeta) = 0;
  // Batch normalization alone.
  void batchnorm_forward_training(const BatchNormShape& s, float eps, float decay, const float* x,
                                  const float* gamma, const float* beta, float* y,
                                  float* running_mean, float* running_var, float* save_mean,
                                  float* save_inv_std) {
    batchnorm_activation_forward_training(s, Activation::kIdentity, eps, decay, x, gamma, beta, y,
                                          running_mean, running_var, save_mean, save_inv_std,
                                          nullptr);
  }
  void batchnorm_forward_inference(const BatchNormShape& s, float eps, const float* x,
                                   const float* gamma, const float* beta, const float* running_mean,
                                   const float* running_var, float* y) {
    batchnorm_activation_forward_inference(s, Activation::kIdentity, eps, x, gamma, beta,
                                           running_mean, running_var, y);
  }
  void batchnorm_backward(const BatchNormShape& s, const float* x, const float* dy,
                          const float* gamma, const float* save_mean, const float* save_inv_std,
                          float* dx, float* dgamma, float* dbeta) {
    batchnorm_activation_backward(s, Activation::kIdentity, x, dy, gamma, save_mean, save_inv_std,
                                  nullptr, dx, dgamma, dbeta);
  }

  // ---- recorded work ------------------------------------------------------------------------
  // A device backend can record the ops issued between begin_recording() and end_recording()
  // instead of running them, and replay them later for the cost of one launch. begin_recording()
  // returns false where recording saves nothing (the CPU: its ops are plain calls). end_recording()
  // must follow a true begin_recording() on the same thread, also when an op in between threw; it
  // returns null when the recording failed (nothing recorded ran, so the caller runs the ops).
  virtual bool begin_recording() { return false; }
  virtual std::unique_ptr<RecordedWork> end_recording() { return nullptr; }

  // ---- updaters over the flat buffers ----------------------------------------------------
  // state holds updater_state_per_parameter(h.type) * n floats, laid out as consecutive blocks
  // of n (Adam: m then v). DL4J's update rules, after each range's L2 and weight-decay terms
  // (UpdateTerms), in the same pass; grads is left as it was.
  virtual void updater_step(const UpdaterHyper& h, std::size_t n, float* params, const float* grads,
                            float* state, const UpdateTermRanges& terms) = 0;
};

}  // namespace dl
