#include <string>

#include "core/error.hpp"
#include "cublas_library.hpp"
#include "cuda_check.hpp"
#include "library_check.hpp"

namespace dl::gpu {

namespace {

[[noreturn]] void fail(const char* library, const std::string& what, const char* call,
                       const char* file, int line) {
  throw Error(ExitCode::kFailure, std::string(file) + ":" + std::to_string(line) + ": " + library +
                                      " call " + call + " failed: " + what +
                                      "; check the GPU with nvidia-smi, or run with backend: cpu");
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  fail("CUDA", std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")",
       call, file, line);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return;
  fail("CUDA", std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")",
       (std::string("launch of ") + kernel).c_str(), file, line);
}

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  fail("cuDNN", cudnnGetErrorString(status), call, file, line);
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  fail("cuBLAS",
       std::string(cublas().status_name(status)) + " (" + cublas().status_string(status) + ")", call,
       file, line);
}

}  // namespace dl::gpu
