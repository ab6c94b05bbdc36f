#include "cuda_backend.hpp"

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "cublas_library.hpp"
#include "cuda_check.hpp"
#include "cuda_memory.hpp"
#include "library_check.hpp"
#include "ops/augment.hpp"
#include "ops/bias_sums.hpp"
#include "ops/conv2d_cudnn.hpp"
#include "ops/dense.hpp"
#include "ops/gather.hpp"
#include "ops/precision_cast.hpp"
#include "ops/vector_ops.hpp"

namespace dl::gpu {

namespace {

// cuBLAS's workspace, given to it from the device cache so that GEMMs never allocate (and can be
// captured in a CUDA graph). NVIDIA's recommended sizes: 32 MiB on Hopper and later, 4 MiB before.
constexpr std::size_t kCublasWorkspaceHopper = std::size_t{32} << 20;
constexpr std::size_t kCublasWorkspaceEarlier = std::size_t{4} << 20;
constexpr int kHopperMajor = 9;
// BFLOAT16 tensors in cuDNN and cuBLAS need compute capability 8.0 (Ampere) or newer.
constexpr int kBFloat16MinMajor = 8;
// Each 16-bit operand of a dense GEMM starts at this byte boundary (cuBLAS's tensor-core kernels
// want at least 16-byte aligned operands; 256 is what cudaMalloc gives).
constexpr std::size_t kOperandAlignBytes = 256;

std::size_t aligned_half_bytes(std::size_t values) {
  return (values * kHalfBytes + kOperandAlignBytes - 1) / kOperandAlignBytes * kOperandAlignBytes;
}

LaunchLimits limits_of(const CudaConfig& c) {
  LaunchLimits l;
  l.max_grid = c.maximumGridSize;
  l.max_block = c.maximumBlockSize;
  return l;
}

CacheLimits cache_limits(std::uint64_t cacheable_length, std::uint64_t cache, int sharers) {
  const std::uint64_t share = cache / static_cast<std::uint64_t>(std::max(sharers, 1));
  return CacheLimits{static_cast<std::size_t>(cacheable_length), static_cast<std::size_t>(share)};
}

}  // namespace

void CudaBackend::StreamDeleter::operator()(cudaStream_t s) const {
  (void)cudaStreamDestroy(s);
}
void CudaBackend::CudnnDeleter::operator()(cudnnContext* h) const {
  (void)cudnnDestroy(h);
}
void CudaBackend::CublasDeleter::operator()(cublasContext* h) const {
  (void)cublas().destroy(h);
}

CudaBackend::CudaBackend(const Config& config, int device, CacheShares shares)
    : device_(device), limits_(limits_of(config.cuda)), half_format_(half_format_of(config.dtype)) {
  DL_CUDA_CALL(cudaSetDevice(device_));
  int major = 0, minor = 0;
  DL_CUDA_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_));
  DL_CUDA_CALL(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_));
  if (half_format_ == HalfFormat::kBFloat16 && major < kBFloat16MinMajor)
    throw ConfigError("dtype: BFLOAT16 needs a GPU of compute capability " +
                      std::to_string(kBFloat16MinMajor) + ".0 or newer, device " +
                      std::to_string(device_) + " has " + std::to_string(major) + "." +
                      std::to_string(minor) + "; set dtype: HALF or FLOAT");
  cudaStream_t stream = nullptr;
  // Non-blocking: the worker's stream never waits for work on the legacy default stream.
  DL_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_.reset(stream);

  device_memory_ = std::make_unique<DeviceMemory>(device_);
  host_memory_ = std::make_unique<PinnedHostMemory>();
  device_cache_ = std::make_unique<CachingAllocator>(
      *device_memory_, cache_limits(config.memory.maximumDeviceCacheableLength,
                                    config.memory.maximumDeviceCache, shares.workers_on_device));
  host_cache_ = std::make_unique<CachingAllocator>(
      *host_memory_, cache_limits(config.memory.maximumHostCacheableLength,
                                  config.memory.maximumHostCache, shares.workers_in_process));

  cudnnHandle_t cudnn = nullptr;
  DL_CUDNN_CALL(cudnnCreate(&cudnn));
  cudnn_.reset(cudnn);
  DL_CUDNN_CALL(cudnnSetStream(cudnn, stream));

  cublasHandle_t handle = nullptr;
  DL_CUBLAS_CALL(cublas().create(&handle));
  cublas_.reset(handle);
  DL_CUBLAS_CALL(cublas().set_stream(handle, stream));
  // Float32 GEMMs without TF32 tensor cores, like the CPU's sgemm. The 16-bit GEMMs of mixed
  // precision (cublasGemmEx with CUBLAS_COMPUTE_32F) use tensor cores under this mode too.
  DL_CUBLAS_CALL(cublas().set_math_mode(handle, CUBLAS_DEFAULT_MATH));
  const std::size_t cublas_workspace =
      major >= kHopperMajor ? kCublasWorkspaceHopper : kCublasWorkspaceEarlier;
  DL_CUBLAS_CALL(
      cublas().set_workspace(handle, device_cache_->allocate(cublas_workspace), cublas_workspace));

  convolution_ = std::make_unique<CudnnConvolution>(
      cudnn, static_cast<std::size_t>(config.memory.maximumDeviceCacheableLength), half_format_,
      config.deterministic);
  partials_ = static_cast<double*>(
      device_cache_->allocate(static_cast<std::size_t>(limits_.max_grid) * sizeof(double)));
  sum_partials_ = static_cast<double*>(device_cache_->allocate(kBiasSumPartials * sizeof(double)));
  non_finite_flag_ = static_cast<int*>(device_cache_->allocate(sizeof(int)));
  host_flag_ = static_cast<int*>(host_cache_->allocate(sizeof(int)));
}

CudaBackend::~CudaBackend() {
  // Let queued work finish before its memory and handles go; errors here were (or will be)
  // reported by the op that caused them.
  if (cudaSetDevice(device_) == cudaSuccess) (void)cudaStreamSynchronize(stream_.get());
  if (dense_scratch_ != nullptr) device_cache_->release(dense_scratch_);
  for (const Staging& s : staging_) {
    host_cache_->release(s.block);
    (void)cudaEventDestroy(s.copied);
  }
  for (cudaEvent_t e : idle_events_) (void)cudaEventDestroy(e);
}

std::string CudaBackend::name() const {
  const std::string device = "cuda:" + std::to_string(device_);
  if (!half_format_) return device;
  const DType dtype = *half_format_ == HalfFormat::kHalf ? DType::kHalf : DType::kBFloat16;
  return device + " (" + std::string(enum_name(dtype)) + ")";
}

void CudaBackend::activate() const {
  DL_CUDA_CALL(cudaSetDevice(device_));
}

cudaEvent_t CudaBackend::idle_event() {
  if (!idle_events_.empty()) {
    cudaEvent_t e = idle_events_.back();
    idle_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  DL_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void CudaBackend::reclaim_staging() {
  // One stream completes its copies in order: stop at the first one still running.
  while (!staging_.empty()) {
    const Staging s = staging_.front();
    const cudaError_t status = cudaEventQuery(s.copied);
    if (status == cudaErrorNotReady) {
      // Not an error, but some runtimes record it as the last error, which the next launch
      // check would then report: clear it (PyTorch's caching allocator does the same).
      (void)cudaGetLastError();
      return;
    }
    DL_CUDA_CALL(status);
    staging_.pop_front();
    host_cache_->release(s.block);
    idle_events_.push_back(s.copied);
  }
}

void* CudaBackend::dense_scratch(std::size_t bytes) {
  if (bytes <= dense_scratch_bytes_) return dense_scratch_;
  if (dense_scratch_ != nullptr) device_cache_->release(dense_scratch_);
  dense_scratch_ = nullptr;
  dense_scratch_bytes_ = 0;
  dense_scratch_ = device_cache_->allocate(bytes);
  dense_scratch_bytes_ = bytes;
  return dense_scratch_;
}

void CudaBackend::gemm_half_format(bool transpose_a, bool transpose_b, int m, int n, int k,
                                   const void* a, int lda, const void* b, int ldb, bool accumulate,
                                   float* c, int ldc) {
  const cudaDataType_t type = cuda_data_type(*half_format_);
  // CUBLAS_COMPUTE_32F takes float alpha and beta.
  const float one = 1.0f, zero = 0.0f;
  DL_CUBLAS_CALL(cublas().gemm_ex(cublas_.get(), transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                              transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &one, a, type, lda,
                              b, type, ldb, accumulate ? &one : &zero, c, CUDA_R_32F, ldc,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

std::string CudaBackend::convolution_algorithms() const {
  return convolution_->algorithms();
}

std::string CudaBackend::memory_report() const {
  return device_cache_->report() + "\n" + host_cache_->report();
}

// ---- memory -----------------------------------------------------------------------------------

void* CudaBackend::allocate_bytes(std::size_t bytes) {
  activate();
  return device_cache_->allocate(bytes);
}

void CudaBackend::free_bytes(void* p) {
  // A cached block is handed out again only to later work on this same stream, which runs after
  // everything queued before it; a block returned to the driver goes through cudaFree, which waits
  // for the device.
  activate();
  device_cache_->release(p);
}

void CudaBackend::upload(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  reclaim_staging();
  if (bytes > host_cache_->limits().max_cacheable_length) {
    // Too large to stage: the driver copies pageable memory out before this call returns.
    DL_CUDA_CALL(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    return;
  }
  // Staged through pinned memory, the copy is a true asynchronous DMA and the caller may reuse
  // host_src at once; the staging block returns to the cache when the copy has completed.
  void* staging = host_cache_->allocate(bytes);
  std::memcpy(staging, host_src, bytes);
  DL_CUDA_CALL(cudaMemcpyAsync(dst, staging, bytes, cudaMemcpyHostToDevice, stream_.get()));
  const cudaEvent_t copied = idle_event();
  DL_CUDA_CALL(cudaEventRecord(copied, stream_.get()));
  staging_.push_back({staging, copied});
}

void CudaBackend::download(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  activate();
  DL_CUDA_CALL(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  DL_CUDA_CALL(cudaStreamSynchronize(stream_.get()));
  reclaim_staging();
}

void CudaBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const auto* d = static_cast<const char*>(dst);
  const auto* s = static_cast<const char*>(src);
  DL_CHECK(d + bytes <= s || s + bytes <= d, "CudaBackend::copy of overlapping ranges");
  activate();
  DL_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
}

// One strided copy on the stream rather than one per row (a batch of 128 would be 128 launches).
void CudaBackend::copy_rows(std::size_t rows, std::size_t row_floats, const float* src,
                            std::size_t src_stride, float* dst, std::size_t dst_stride) {
  if (rows == 0 || row_floats == 0) return;
  activate();
  DL_CUDA_CALL(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src, src_stride * sizeof(float),
                                 row_floats * sizeof(float), rows, cudaMemcpyDeviceToDevice,
                                 stream_.get()));
}

void CudaBackend::fill(float* x, std::size_t n, float value) {
  activate();
  launch_fill(x, n, value, limits_, stream_.get());
}

void CudaBackend::synchronize() {
  activate();
  DL_CUDA_CALL(cudaStreamSynchronize(stream_.get()));
  reclaim_staging();
}

void CudaBackend::gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                                 std::size_t sample_bytes, const std::int32_t* indices, int n,
                                 float* images, std::int32_t* batch_labels) {
  activate();
  launch_gather_samples(pixels, labels, sample_bytes, indices, n, images, batch_labels, limits_,
                        stream_.get());
}
void CudaBackend::gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                                     const ops::SampleTransform& t, const std::int32_t* indices,
                                     int n, const float* channel_mean, const float* channel_std,
                                     float* images, std::int32_t* batch_labels) {
  activate();
  launch_gather_transformed(pixels, labels, t, indices, n, channel_mean, channel_std, images,
                            batch_labels, limits_, stream_.get());
}

// ---- dense ------------------------------------------------------------------------------------
// cuBLAS is column-major. A row-major [r x c] matrix is, read column-major, its [c x r]
// transpose, so the row-major products become column-major products of the transposes:
//   y  = x w       ->  y^T  = w^T x^T          (m = out, n = n,  k = in)
//   dw = x^T dy    ->  dw^T = dy^T (x^T)^T     (m = out, n = in, k = n)
//   dx = dy w^T    ->  dx^T = (w^T)^T dy^T     (m = in,  n = n,  k = out)
// Mixed precision runs the same three products on 16-bit copies of x, w and dy (in the dense
// scratch buffer: x, then w, then dy, each 256-byte aligned) into the float32 y, dw and dx.

void CudaBackend::dense_forward(int n, int in, int out, const float* x, const float* w,
                                const float* b, float* y) {
  if (n <= 0 || out <= 0) return;
  activate();
  launch_broadcast_bias_rows(n, out, b, y, limits_, stream_.get());
  if (in <= 0) return;
  if (half_format_) {
    const std::size_t x_bytes = aligned_half_bytes(static_cast<std::size_t>(n) * in);
    const std::size_t w_bytes = aligned_half_bytes(static_cast<std::size_t>(in) * out);
    char* scratch = static_cast<char*>(dense_scratch(x_bytes + w_bytes));
    void* x16 = scratch;
    void* w16 = scratch + x_bytes;
    launch_cast_to_half_format(*half_format_, static_cast<std::size_t>(n) * in, x, x16, limits_,
                               stream_.get());
    launch_cast_to_half_format(*half_format_, static_cast<std::size_t>(in) * out, w, w16, limits_,
                               stream_.get());
    constexpr bool kAccumulate = true;  // onto the bias
    gemm_half_format(false, false, out, n, in, w16, out, x16, in, kAccumulate, y, out);
    return;
  }
  const float one = 1.0f;
  DL_CUBLAS_CALL(cublas().sgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, out, n, in, &one, w, out, x,
                             in, &one, y, out));
}

void CudaBackend::dense_backward(int n, int in, int out, const float* x, const float* w,
                                 const float* dy, float* dx, float* dw, float* db) {
  activate();
  if (half_format_ && n > 0 && in > 0 && out > 0) {
    dense_backward_half_format(n, in, out, x, w, dy, dx, dw, db);
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  if (in > 0 && out > 0) {
    if (n > 0) {
      DL_CUBLAS_CALL(cublas().sgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, &one, dy, out,
                                 x, in, &zero, dw, out));
    } else {
      DL_CUDA_CALL(cudaMemsetAsync(dw, 0, static_cast<std::size_t>(in) * out * sizeof(float),
                                   stream_.get()));
    }
  }
  launch_column_sums(n, out, dy, db, sum_partials_, limits_, stream_.get());
  if (dx == nullptr || n <= 0 || in <= 0) return;
  if (out <= 0) {
    DL_CUDA_CALL(
        cudaMemsetAsync(dx, 0, static_cast<std::size_t>(n) * in * sizeof(float), stream_.get()));
    return;
  }
  DL_CUBLAS_CALL(cublas().sgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, &one, w, out, dy,
                             out, &zero, dx, in));
}

void CudaBackend::dense_backward_half_format(int n, int in, int out, const float* x, const float* w,
                                             const float* dy, float* dx, float* dw, float* db) {
  const std::size_t x_values = static_cast<std::size_t>(n) * in;
  const std::size_t w_values = static_cast<std::size_t>(in) * out;
  const std::size_t dy_values = static_cast<std::size_t>(n) * out;
  const std::size_t x_bytes = aligned_half_bytes(x_values);
  const std::size_t w_bytes = aligned_half_bytes(w_values);
  char* scratch =
      static_cast<char*>(dense_scratch(x_bytes + w_bytes + aligned_half_bytes(dy_values)));
  void* x16 = scratch;
  void* w16 = scratch + x_bytes;
  void* dy16 = scratch + x_bytes + w_bytes;
  const HalfFormat f = *half_format_;
  launch_cast_to_half_format(f, x_values, x, x16, limits_, stream_.get());
  launch_cast_to_half_format(f, dy_values, dy, dy16, limits_, stream_.get());
  constexpr bool kOverwrite = false;
  gemm_half_format(false, true, out, in, n, dy16, out, x16, in, kOverwrite, dw, out);
  // The bias gradient needs no product: float32 column sums of dy, as with FLOAT.
  launch_column_sums(n, out, dy, db, sum_partials_, limits_, stream_.get());
  if (dx == nullptr) return;
  launch_cast_to_half_format(f, w_values, w, w16, limits_, stream_.get());
  gemm_half_format(true, false, in, n, out, w16, out, dy16, out, kOverwrite, dx, in);
}

// ---- convolution ------------------------------------------------------------------------------

std::size_t CudaBackend::conv2d_workspace_floats(const Conv2dGeometry& g) const {
  activate();
  return std::max(convolution_->workspace_floats(g), backward_by_columns_workspace_floats(g));
}

void CudaBackend::conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w,
                                 const float* b, float* y, float* workspace) {
  activate();
  convolution_->forward(g, x, w, b, y, workspace, limits_, stream_.get());
}

void CudaBackend::conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w,
                                  const float* dy, float* dx, float* dw, float* db,
                                  float* workspace) {
  activate();
  launch_channel_sums(g.batch, g.out_channels, g.out_height * g.out_width, dy, db, sum_partials_,
                      limits_, stream_.get());
  conv2d_backward_by_columns(g, x, w, dy, dx, dw, workspace);
}

}  // namespace dl::gpu
