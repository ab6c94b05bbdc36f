// The CUDA backend: the Backend interface on one GPU, with cuDNN for convolutions, cuBLAS for the
// dense layer's products, and the kernels of cuda/ops/ for everything else.
//
// One instance per worker. Each owns a stream, and its cuDNN and cuBLAS handles are bound to
// that stream, so every op of a worker runs in order on its own stream and workers sharing a GPU
// overlap. Ops return as soon as their work is queued; only download, all_finite and synchronize
// wait for the stream (the contract needs host-visible results there). Memory comes from a
// caching device allocator and uploads are staged through a caching pinned-host allocator, both
// with Config::memory's limits, so a training step allocates nothing from the driver once the
// caches are warm. Kernel launches respect Config::cuda's maximumGridSize and maximumBlockSize.
//
// Precision follows Config::dtype. FLOAT: float32 throughout (no TF32), results match the CPU
// backend to float rounding, and dropout masks match it exactly. HALF or BFLOAT16: mixed
// precision in the manner of PyTorch's autocast: the convolutions (forward, backward-data,
// backward-filter) and the dense layer's three GEMMs round their inputs to the 16-bit format and
// run on tensor cores with float32 accumulation; every buffer of the Backend interface
// (activations, parameters, gradients, updater state) stays float32, and so does every other op.
// See docs/CUDA.md for exactly what is rounded where.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "caching_allocator.hpp"
#include "config/config.hpp"
#include "launch_limits.hpp"
#include "ops/precision_cast.hpp"

struct cudnnContext;
struct cublasContext;

namespace dl::gpu {

class CudnnConvolution;
class DeviceMemory;
class PinnedHostMemory;

// How many workers share the caches' limits with this one. Config::memory's limits are DL4J's:
// maximumDeviceCache per device, maximumHostCache per process. Each worker's backend has its own
// caches (a block freed on one worker's stream must not be handed to another stream while still
// in use), so each gets its share of the totals.
struct CacheShares {
  int workers_on_device = 1;
  int workers_in_process = 1;
};

class CudaBackend final : public Backend {
 public:
  // Runs on GPU `device` (a CUDA device ordinal, visible to this process), in the precision of
  // config.dtype. Throws ConfigError for BFLOAT16 on a GPU before compute capability 8.0.
  CudaBackend(const Config& config, int device, CacheShares shares = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // "cuda:0" for FLOAT, "cuda:0 (HALF)" or "cuda:0 (BFLOAT16)" for mixed precision.
  std::string name() const override;
  BackendKind kind() const override { return BackendKind::kCuda; }

  void* allocate_bytes(std::size_t bytes) override;
  void free_bytes(void* p) override;
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;
  // Device-to-device; the two ranges must not overlap (checked).
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_rows(std::size_t rows, std::size_t row_floats, const float* src,
                 std::size_t src_stride, float* dst, std::size_t dst_stride) override;
  void fill(float* x, std::size_t n, float value) override;
  void synchronize() override;
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

  // A CUDA graph captured from this backend's stream (cuda_graph_recording.cpp).
  bool begin_recording() override;
  std::unique_ptr<RecordedWork> end_recording() override;

  // For the NCCL collective and the trainer: the GPU and the stream this backend's ops run on.
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  // The 16-bit format of the tensor-core inputs; none when config.dtype is FLOAT.
  std::optional<HalfFormat> half_format() const { return half_format_; }
  // Two lines of cache statistics (device, pinned host) for the end of a run.
  std::string memory_report() const override;
  std::string convolution_algorithms() const override;

 private:
  struct StreamDeleter {
    void operator()(cudaStream_t s) const;
  };
  struct CudnnDeleter {
    void operator()(cudnnContext* h) const;
  };
  struct CublasDeleter {
    void operator()(cublasContext* h) const;
  };
  // A pinned staging block of an upload, free to reuse once `copied` has completed.
  struct Staging {
    void* block;
    cudaEvent_t copied;
  };

  // Makes this backend's GPU current for the calling thread (workers and the thread that binds
  // the model may differ).
  void activate() const;
  // Returns staging blocks whose copies have finished to the pinned cache.
  void reclaim_staging();
  cudaEvent_t idle_event();
  // The dense layer's 16-bit copies of its GEMM inputs, `bytes` at least. The Backend gives the
  // dense ops no workspace, so the backend keeps one buffer, replaced by a larger one from the
  // device cache only when a larger product is first seen: after a model's first step nothing is
  // allocated. The old buffer goes back to the cache, which serves it only to later work on this
  // stream, so GEMMs still queued on it are unaffected.
  void* dense_scratch(std::size_t bytes);
  // The convolutions' backward pass as cuBLAS products over chunks of samples
  // (conv2d_backward_by_columns.cpp), and the workspace it needs.
  std::size_t backward_by_columns_workspace_floats(const Conv2dGeometry& g) const;
  void conv2d_backward_by_columns(const Conv2dGeometry& g, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* workspace);
  // C = op(A) op(B) (+ C when accumulate) with 16-bit A and B in half_format_ and float32 C,
  // float32 arithmetic (column-major arguments, as cublasGemmEx takes them).
  // dense_backward in mixed precision, for n, in and out all positive.
  void dense_backward_half_format(int n, int in, int out, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db);
  void gemm_half_format(bool transpose_a, bool transpose_b, int m, int n, int k, const void* a,
                        int lda, const void* b, int ldb, bool accumulate, float* c, int ldc);

  const int device_;
  const LaunchLimits limits_;
  const std::optional<HalfFormat> half_format_;
  // Declaration order is teardown order reversed: the stream outlives everything queued on it,
  // the caches outlive the handles and scratch buffers that use their memory.
  std::unique_ptr<CUstream_st, StreamDeleter> stream_;
  std::unique_ptr<DeviceMemory> device_memory_;
  std::unique_ptr<PinnedHostMemory> host_memory_;
  std::unique_ptr<CachingAllocator> device_cache_;
  std::unique_ptr<CachingAllocator> host_cache_;
  std::unique_ptr<cudnnContext, CudnnDeleter> cudnn_;
  std::unique_ptr<cublasContext, CublasDeleter> cublas_;
  std::unique_ptr<CudnnConvolution> convolution_;
  double* partials_ = nullptr;      // limits_.max_grid per-block partial sums of the reductions
  double* sum_partials_ = nullptr;  // kBiasSumPartials chunk totals of the bias gradients
  int* non_finite_flag_ = nullptr;
  int* host_flag_ = nullptr;  // pinned, for all_finite's read-back
  void* dense_scratch_ = nullptr;
  std::size_t dense_scratch_bytes_ = 0;
  std::deque<Staging> staging_;
  std::vector<cudaEvent_t> idle_events_;
};

}  // namespace dl::gpu
