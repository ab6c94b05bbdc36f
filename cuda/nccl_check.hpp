// Turns a failed NCCL call into an exception naming the call, the file and the line, with NCCL's
// own text for the status. Apart from library_check.hpp (cuDNN, cuBLAS) because the GPU
// collective is also built against the host emulator's stand-in NCCL, which has no cuDNN.
#pragma once

#include <nccl.h>

namespace dl::gpu {

void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace dl::gpu

#define DL_NCCL_CALL(expr) ::dl::gpu::check_nccl((expr), #expr, __FILE__, __LINE__)
