// Lets one op test binary run over each library behind the CPU backend's products: before the
// tests start, DL_TEST_CPU_KERNELS (auto, onednn or cblas; unset: cblas, the path the tests were
// written against) picks it, and the choice is printed so a test log says which path it covered.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cpu/gemm.hpp"

namespace {

dl::CpuKernels kernels_from_env() {
  const char* value = std::getenv("DL_TEST_CPU_KERNELS");
  const std::string name = value == nullptr ? "cblas" : value;
  if (name == "auto") return dl::CpuKernels::kAuto;
  if (name == "onednn") return dl::CpuKernels::kOnednn;
  if (name == "cblas") return dl::CpuKernels::kCblas;
  std::fprintf(stderr, "DL_TEST_CPU_KERNELS=%s: use auto, onednn or cblas\n", name.c_str());
  std::exit(2);
}

const bool selected = [] {
  std::fprintf(stderr, "%s\n", dl::select_cpu_kernels(kernels_from_env()).c_str());
  return true;
}();

}  // namespace
