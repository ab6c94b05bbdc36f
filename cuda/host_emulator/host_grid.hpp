// The host grid: what the kernels of cuda/ need from CUDA, for compiling them as host C++ and
// running them on the CPU. Every thread of a block runs as a fiber on one OS thread, so
// __syncthreads and warp shuffles wait for the other threads exactly as on a GPU; blocks run one
// after another. The launch syntax `kernel<<<grid, block, shared, stream>>>(args)` is rewritten
// by rewrite_launches.py into `::dl::emu::launch(kernel, "kernel", grid, block, shared,
// stream)(args)`; the .cu files themselves are not changed. docs/CUDA.md says what this can and
// cannot show.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "host_streams.hpp"

// ---- types of the runtime API ------------------------------------------------------------------

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };

cudaError_t cudaGetLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream);
// Devices, memory, streams and events (host_streams.hpp, host_streams.cpp).
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceGetPCIBusId(char* id, int length, int device);
cudaError_t cudaMalloc(void** p, std::size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);

// ---- qualifiers --------------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// One block runs at a time on an OS thread, so a function's static is that block's shared array.
#define __shared__ static thread_local

namespace dl::emu {

// The position of the fiber running now.
struct ThreadPosition {
  dim3 thread, block, block_dim, grid_dim;
};
const ThreadPosition& position();

void sync_block();
// Exchanges `bytes` bytes of each lane's value through the warp: the value of lane + delta, or the
// caller's own when that lane is beyond the warp.
void shuffle_down(unsigned mask, void* value, std::size_t bytes, unsigned delta);

// Runs body on every thread of the grid. Records the kernel as run (see kernels_run).
void run_grid(const char* name, const void* kernel, dim3 grid, dim3 block,
              const std::function<void()>& body);

// Every __global__ function of the compiled .cu files (registered by each rewritten file), and
// those launched so far in this process: by name, and by instantiation.
bool register_kernels(const char* file, std::initializer_list<const char*> names);
std::vector<std::string> kernels_defined();
std::vector<std::string> kernels_run();
std::size_t instantiations_run();
std::size_t launches_run();

template <typename... P>
struct KernelCall {
  void (*kernel)(P...);
  const char* name;
  dim3 grid, block;
  cudaStream_t stream;

  template <typename... A>
  void operator()(A&&... args) const {
    // Arguments are converted to the parameter types once, as the launch copies them; each
    // thread then gets its own copy, as each CUDA thread has its own parameters.
    const std::tuple<std::decay_t<P>...> values(std::forward<A>(args)...);
    // The grid runs on this thread, so it first waits for the work queued before it.
    wait_stream_idle(stream);
    run_grid(name, reinterpret_cast<const void*>(kernel), grid, block,
             [&] { std::apply(kernel, values); });
  }
};

// The base name of a launch expression ("pool_backward_kernel<PoolingType::kMax>" gives
// "pool_backward_kernel"), which is what the kernel list counts.
template <typename... P>
KernelCall<P...> launch(void (*kernel)(P...), const char* name, dim3 grid, dim3 block,
                        std::size_t shared_bytes = 0, cudaStream_t stream = nullptr) {
  (void)shared_bytes;
  return {kernel, name, grid, block, stream};
}

// ---- 16-bit storage types, round to nearest even -------------------------------------------

std::uint16_t float_to_half_bits(float v);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16_bits(float v);
float bfloat16_bits_to_float(std::uint16_t bits);

}  // namespace dl::emu

// ---- built-in variables and functions ----------------------------------------------------------

#define threadIdx (::dl::emu::position().thread)
#define blockIdx (::dl::emu::position().block)
#define blockDim (::dl::emu::position().block_dim)
#define gridDim (::dl::emu::position().grid_dim)

inline void __syncthreads() {
  ::dl::emu::sync_block();
}

template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8);
  ::dl::emu::shuffle_down(mask, &value, sizeof(T), delta);
  return value;
}

inline unsigned __float_as_uint(float v) {
  unsigned bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
// IEEE division rounded to nearest: the host's default.
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline int max(int a, int b) {
  return a > b ? a : b;
}
inline int min(int a, int b) {
  return a < b ? a : b;
}

struct __half {
  std::uint16_t bits;
};
struct __nv_bfloat16 {
  std::uint16_t bits;
};
inline __half __float2half_rn(float v) {
  return {::dl::emu::float_to_half_bits(v)};
}
inline float __half2float(__half v) {
  return ::dl::emu::half_bits_to_float(v.bits);
}
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  return {::dl::emu::float_to_bfloat16_bits(v)};
}
inline float __bfloat162float(__nv_bfloat16 v) {
  return ::dl::emu::bfloat16_bits_to_float(v.bits);
}
