#include "nccl_check.hpp"

#include <string>

#include "core/error.hpp"

namespace dl::gpu {

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  throw Error(ExitCode::kFailure, std::string(file) + ":" + std::to_string(line) + ": NCCL call " +
                                      call + " failed: " + ncclGetErrorString(status) +
                                      "; check the GPU with nvidia-smi, or run with backend: cpu");
}

}  // namespace dl::gpu
