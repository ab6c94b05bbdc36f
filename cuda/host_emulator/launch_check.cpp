// The launch and call checks of cuda_check.hpp for kernels on the host grid: the same errors as
// status_check.cpp, from the host grid's runtime functions.
#include <string>

#include "core/error.hpp"
#include "cuda_check.hpp"

namespace dl::gpu {

namespace {

[[noreturn]] void fail(cudaError_t status, const std::string& call, const char* file, int line) {
  throw Error(ExitCode::kFailure, std::string(file) + ":" + std::to_string(line) + ": CUDA call " +
                                      call +
                                      " failed on the host grid: " + cudaGetErrorName(status) +
                                      " (" + cudaGetErrorString(status) + ")");
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) fail(status, call, file, line);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) fail(status, std::string("launch of ") + kernel, file, line);
}

}  // namespace dl::gpu
