// gemm.hpp's oneDNN half, built when meson finds oneDNN (option onednn).
#include <dnnl.h>
#include <omp.h>
#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/isa.hpp"
#include "core/error.hpp"
#include "core/memory_limits.hpp"
#include "core/out_of_memory.hpp"

namespace dl {

bool onednn_built() {
  return true;
}

}  // namespace dl

namespace dl::cpu {

namespace {

// Debian's oneDNN runs its sgemm on OpenMP threads, as many as the calling thread's OpenMP
// setting allows (every core by default). The ops call it from their own tasks, one per thread,
// so each calling thread is set to one OpenMP thread the first time it calls: the thread count
// then never multiplies, and a product's sums are the same on any number of threads.
void keep_this_thread_single() {
  thread_local const bool done = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)done;
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "no JIT (reference code)";
  }
}

// oneDNN's dispatch level for a DL_CPU_ISA cap: the widest it has within the level (its lowest,
// SSE4.1, for plain x86-64, where a CPU without it gets oneDNN's reference code).
dnnl_cpu_isa_t onednn_isa_within(IsaLevel level) {
  switch (level) {
    case IsaLevel::kX86_64:
      return dnnl_cpu_isa_sse41;
    case IsaLevel::kAvx2:
      return dnnl_cpu_isa_avx2;
    case IsaLevel::kAvx512:
      return dnnl_cpu_isa_avx512_core;
  }
  return dnnl_cpu_isa_all;
}

// DL_CPU_ISA caps oneDNN's JIT as it caps our own kernels, so that the cap stands in for a CPU of
// that level as a whole (an AVX2 server's products run oneDNN's AVX2 code, not the AVX-512 or AMX
// code of the machine that stands in). oneDNN's own DNNL_MAX_CPU_ISA or ONEDNN_MAX_CPU_ISA, when
// set, decides instead. Applied once, before the first product; the start-up line names the level
// oneDNN then runs (onednn_description).
void cap_onednn_isa() {
  static const bool applied = [] {
    const std::optional<IsaLevel> cap = isa_cap_from_environment();
    if (!cap || std::getenv("DNNL_MAX_CPU_ISA") != nullptr ||
        std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr) {
      return false;
    }
    return dnnl_set_max_cpu_isa(onednn_isa_within(*cap)) == dnnl_success;
  }();
  (void)applied;
}

}  // namespace

void onednn_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cap_onednn_isa();
  keep_this_thread_single();
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha,
                                          a, lda, b, ldb, beta, c, ldc);
  // Its scratch could not be allocated: the caller's AllocationPurpose names what for.
  if (status == dnnl_out_of_memory) throw std::bad_alloc();
  if (status != dnnl_success) {
    throw InternalError("oneDNN sgemm failed (status " + std::to_string(status) + ")");
  }
}

namespace {

// What oneDNN's code generation is left of the address space must hold its kernels (about 6 MiB
// for AVX2's 24), with room to spare: a mapping of this size is made and dropped first.
constexpr std::size_t kKernelCodeHeadroomBytes = std::size_t{16} << 20;

void check_kernel_code_headroom() {
  void* probe = mmap(nullptr, kKernelCodeHeadroomBytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe != MAP_FAILED) {
    munmap(probe, kKernelCodeHeadroomBytes);
    return;
  }
  const std::optional<std::uint64_t> limit = address_space_limit();
  const std::string room = format_bytes(kKernelCodeHeadroomBytes);
  const std::string what =
      " for the code of oneDNN's matrix-product kernels (cpu.kernels), made at "
      "start-up; ";
  throw Error(ExitCode::kOutOfMemory,
              limit
                  ? "out of memory before training: the address-space limit of " +
                        format_bytes(static_cast<std::size_t>(*limit)) + " (ulimit -v) leaves no " +
                        room + what + "raise the limit, or run where more memory is free"
                  : "out of memory before training: no " + room + " is left" + what +
                        "run where more memory is free");
}

}  // namespace

void prepare_onednn() {
  check_kernel_code_headroom();
  // Square products take oneDNN's blocked kernels; one row or one column its matrix-vector ones.
  constexpr int kSide = 64;
  const std::vector<float> a(kSide * kSide, 0.5f), b(kSide * kSide, 0.25f);
  std::vector<float> c(kSide * kSide, 0.0f);
  const int shapes[][2] = {{kSide, kSide}, {1, kSide}, {kSide, 1}};
  for (const auto& [m, n] : shapes) {
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const float beta : {0.0f, 1.0f}) {
          onednn_sgemm(trans_a, trans_b, m, n, kSide, 1.0f, a.data(), trans_a ? m : kSide, b.data(),
                       trans_b ? kSide : n, beta, c.data(), n);
        }
      }
    }
  }
}

std::string onednn_description() {
  cap_onednn_isa();
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " sgemm, " + isa_name(dnnl_get_effective_cpu_isa()) +
         " JIT for this CPU";
}

}  // namespace dl::cpu
