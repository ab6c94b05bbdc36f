#include "backend/cpu/gemm.hpp"

#include <cblas.h>

#include <atomic>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/isa.hpp"
#include "core/error.hpp"
#include "core/memory_limits.hpp"

namespace dl {

namespace {

// Set once before the workers start, read by every product.
std::atomic<CpuKernels> g_kernels{CpuKernels::kCblas};

// OpenBLAS maps a buffer for each thread's first product and, where the mapping fails, tries
// again without end (a run under ulimit -v spun for 20 minutes), where oneDNN's products end the
// run with exit 7: said on the start-up line when CBLAS products run under such a limit.
std::string address_space_warning() {
  if (!address_space_limit()) return "";
  return std::string(
             "; under this address-space limit (ulimit -v) OpenBLAS waits without end "
             "for a buffer it cannot map") +
         (onednn_built() ? ", where cpu.kernels: onednn ends the run with exit 7" : "");
}

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
  if (onednn) {
    cpu::prepare_onednn();
    return "CPU kernels: " + cpu::onednn_description() + " (" + why + ")" + own;
  }
  return std::string("CPU kernels: CBLAS sgemm (") + why +
         (onednn_built() ? ")" : "; built without oneDNN)") + own + address_space_warning();
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
