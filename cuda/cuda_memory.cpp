#include "cuda_memory.hpp"

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"

namespace dl::gpu {

namespace {

// An allocation that failed for lack of memory returns nullptr, so the cache can flush and
// retry; the error is cleared so that the next launch check does not report it again.
void* out_of_memory() {
  (void)cudaGetLastError();
  return nullptr;
}

// Makes `device` current for a scope and then puts back the device the calling thread had: the
// thread that frees or allocates may be working on another device (a collective's leader, a
// teardown), and must not be left on this one.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    status_ = cudaSetDevice(device);
  }
  ~OnDevice() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace

void* DeviceMemory::allocate(std::size_t bytes) {
  const OnDevice on(device_);
  DL_CUDA_CALL(on.status());
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) return out_of_memory();
  DL_CUDA_CALL(status);
  return p;
}

void DeviceMemory::free(void* p) {
  const OnDevice on(device_);
  if (on.status() == cudaSuccess) (void)cudaFree(p);
}

// Portable: pinned for every device's context, whichever device was current when it was made.
void* PinnedHostMemory::allocate(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (status == cudaErrorMemoryAllocation) return out_of_memory();
  DL_CUDA_CALL(status);
  return p;
}

void PinnedHostMemory::free(void* p) {
  (void)cudaFreeHost(p);
}

}  // namespace dl::gpu
