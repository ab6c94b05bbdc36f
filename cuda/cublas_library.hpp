// cuBLAS, loaded when a CUDA backend first needs it rather than when dl-train starts. Linked
// like the other CUDA libraries, libcublas pulls in libcublasLt, whose start-up (350,000
// relocations into 96 MB of data, and its initializers) left about 150 MB resident in every
// process, CPU runs included: the peak RSS of a ResNet-20 epoch on the CPU (2,560 images) fell
// from 429 to 278 MiB without it. The CUDA backend and `info`
// call cuBLAS through this table instead; nothing else in the binary names a cuBLAS function,
// and the build does not link the library, so a call that bypassed the table would not link.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>

namespace dl::gpu {

// cublasGemmEx with a cublasComputeType_t, the exported function: C++ builds also see an inline
// overload taking a cudaDataType, which converts and calls it. The cast below fails to compile
// if the header's declaration ever differs from this type.
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                        int, int, const void*, const void*, cudaDataType, int,
                                        const void*, cudaDataType, int, const void*, void*,
                                        cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

// The functions dl-train calls, with cuBLAS's own signatures. cublas_v2.h maps the plain names
// to the _v2 entry points (cublasCreate -> cublasCreate_v2); the types follow that mapping.
struct CublasLibrary {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetWorkspace) set_workspace;
  decltype(&cublasSgemm) sgemm;
  decltype(static_cast<CublasGemmEx>(&cublasGemmEx)) gemm_ex;
  decltype(&cublasGetProperty) get_property;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasLtGetVersion) lt_version;  // from libcublasLt, which libcublas loads
};

// The library's file name for the cuBLAS major version of the headers built against
// ("libcublas.so.13").
std::string cublas_file_name();

// Loads cuBLAS on the first call (thread-safe) and returns its functions. Throws Error
// (ExitCode::kFailure) naming the file, the loader's reason and the fix when the library or one
// of its functions cannot be found; every later call throws the same.
const CublasLibrary& cublas();

}  // namespace dl::gpu
