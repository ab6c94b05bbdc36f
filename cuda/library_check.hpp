// Turns a failed cuDNN or cuBLAS call into an exception naming the call, the file and the
// line, with the library's own text for the status.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

namespace dl::gpu {

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace dl::gpu

#define DL_CUDNN_CALL(expr) ::dl::gpu::check_cudnn((expr), #expr, __FILE__, __LINE__)
#define DL_CUBLAS_CALL(expr) ::dl::gpu::check_cublas((expr), #expr, __FILE__, __LINE__)
