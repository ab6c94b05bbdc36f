#include "cublas_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#include "core/error.hpp"

// The exported name of a function after cublas_v2.h's renaming (cublasCreate -> "cublasCreate_v2").
#define DL_CUBLAS_SYMBOL_TEXT(name) #name
#define DL_CUBLAS_SYMBOL(name) DL_CUBLAS_SYMBOL_TEXT(name)

namespace dl::gpu {

namespace {

// dlopen searches as the linker's loader would (LD_LIBRARY_PATH, the binary's run path with the
// toolkit's lib64, ld.so.cache). RTLD_LOCAL keeps its symbols out of the global scope: only the
// table sees them.
CublasLibrary load() {
  const std::string file = cublas_file_name();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw Error(ExitCode::kFailure,
                "cannot load cuBLAS (" + file + "): " + (why != nullptr ? why : "unknown reason") +
                    "; install the CUDA toolkit's cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                    " (its lib64 in LD_LIBRARY_PATH or ld.so.conf), or run with backend: cpu");
  }
  // Resolves one function; the handle stays open for the process's life, like a linked library.
  auto find = [&](auto& slot, const char* symbol) {
    void* address = dlsym(handle, symbol);
    if (address == nullptr)
      throw Error(ExitCode::kFailure, file + " has no function " + symbol +
                                          ": another cuBLAS than the " +
                                          std::to_string(CUBLAS_VER_MAJOR) +
                                          ".x dl-train was built with; install that version");
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  CublasLibrary api{};
  find(api.create, DL_CUBLAS_SYMBOL(cublasCreate));
  find(api.destroy, DL_CUBLAS_SYMBOL(cublasDestroy));
  find(api.set_stream, DL_CUBLAS_SYMBOL(cublasSetStream));
  find(api.set_math_mode, DL_CUBLAS_SYMBOL(cublasSetMathMode));
  find(api.set_workspace, DL_CUBLAS_SYMBOL(cublasSetWorkspace));
  find(api.sgemm, DL_CUBLAS_SYMBOL(cublasSgemm));
  find(api.gemm_ex, DL_CUBLAS_SYMBOL(cublasGemmEx));
  find(api.get_property, DL_CUBLAS_SYMBOL(cublasGetProperty));
  find(api.status_name, DL_CUBLAS_SYMBOL(cublasGetStatusName));
  find(api.status_string, DL_CUBLAS_SYMBOL(cublasGetStatusString));
  find(api.lt_version, DL_CUBLAS_SYMBOL(cublasLtGetVersion));
  return api;
}

}  // namespace

std::string cublas_file_name() {
  return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
}

const CublasLibrary& cublas() {
  // call_once retries after a throw, so a failed load reports itself again on every call.
  static std::once_flag once;
  static CublasLibrary api;
  std::call_once(once, [] { api = load(); });
  return api;
}

}  // namespace dl::gpu
