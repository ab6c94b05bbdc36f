#include "backend/cpu/gemm.hpp"

#include <cblas.h>

#include <atomic>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/isa.hpp"
#include "core/error.hpp"

namespace dl {

namespace {

// Set once before the workers start, read by every product.
std::atomic<CpuKernels> g_kernels{CpuKernels::kCblas};

}  // namespace

std::string select_cpu_kernels(CpuKernels requested) {
  if (requested == CpuKernels::kOnednn && !onednn_built()) {
    throw ConfigError(
        "cpu.kernels: onednn, but this build has no oneDNN; install libdnnl-dev and rebuild "
        "(meson option onednn), or use cpu.kernels: auto or cblas");
  }
  const bool onednn = requested != CpuKernels::kCblas && onednn_built();
  g_kernels.store(onednn ? CpuKernels::kOnednn : CpuKernels::kCblas);
  const char* why = requested == CpuKernels::kAuto ? "cpu.kernels: auto" : "cpu.kernels";
  const std::string own = "; " + cpu::describe_cpu_isa();
  if (onednn) return "CPU kernels: " + cpu::onednn_description() + " (" + why + ")" + own;
  return std::string("CPU kernels: CBLAS sgemm (") + why +
         (onednn_built() ? ")" : "; built without oneDNN)") + own;
}

CpuKernels cpu_kernels_in_use() {
  return g_kernels.load(std::memory_order_relaxed);
}

}  // namespace dl

namespace dl::cpu {

void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc) {
  if (m == 0 || n == 0) return;
  if (cpu_kernels_in_use() == CpuKernels::kOnednn) {
    return onednn_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace dl::cpu
