// blas_control.hpp for OpenBLAS (meson -Dblas=openblas).
#include <cstdlib>

#include "backend/cpu/blas_control.hpp"

extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
void gotoblas_dynamic_init(void);
void gotoblas_dynamic_quit(void);
}

namespace dl {

std::string configure_blas_for_this_cpu() {
  constexpr const char* kCoreTypeVariable = "OPENBLAS_CORETYPE";
  const std::string detected = openblas_get_corename();
  if (std::getenv(kCoreTypeVariable) != nullptr) {
    return "BLAS: OpenBLAS, " + detected + " kernels (" + kCoreTypeVariable + " is set)";
  }
  // Cores OpenBLAS picks for CPUs it does not recognise; anything else it chose on purpose.
  const bool fallback = detected == "Prescott" || detected == "Core2" || detected == "Nehalem" ||
                        detected == "Unknown";
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    better = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    better = "Haswell";
  }
  if (!fallback || better == nullptr) return "BLAS: OpenBLAS, " + detected + " kernels";
  setenv(kCoreTypeVariable, better, 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  return "BLAS: OpenBLAS, " + std::string(openblas_get_corename()) + " kernels (OpenBLAS chose " +
         detected + " for this CPU; set " + kCoreTypeVariable + " to override)";
}

void set_blas_threads(int threads) {
  openblas_set_num_threads(threads);
}
int blas_threads() {
  return openblas_get_num_threads();
}

}  // namespace dl
