// The one matrix product behind the CPU backend's convolution and dense layers, and the choice of
// library that computes it (config key cpu.kernels). oneDNN JIT-compiles its sgemm for the vector
// instructions it finds on the running processor (cpuid, not a table of processor models), so on
// an AVX-512 machine it uses 512-bit kernels where OpenBLAS may be held to AVX2 (the environment's
// OPENBLAS_CORETYPE). The CBLAS (OpenBLAS or the reference one, meson option blas) stays
// available as cpu.kernels: cblas. Whether oneDNN is built in is the meson option onednn: the
// build picks gemm_onednn.cpp or gemm_onednn_absent.cpp.
#pragma once

#include <string>

#include "core/kinds.hpp"

namespace dl {

// Whether this build has oneDNN.
bool onednn_built();

// Chooses the library for every later product in this process (auto: oneDNN when built, else the
// CBLAS) and returns a line for the start-up log that names it and the instruction set it runs,
// and the variant of the backend's own kernels (isa.hpp). Throws ConfigError for kOnednn in a
// build without oneDNN, or for a DL_CPU_ISA this CPU or build cannot run. Call before any worker
// starts.
std::string select_cpu_kernels(CpuKernels requested);

// The library in use now: kOnednn or kCblas.
CpuKernels cpu_kernels_in_use();

}  // namespace dl

namespace dl::cpu {

// Row-major C = alpha * op(A) * op(B) + beta * C with op(A) m x k and op(B) k x n, computed on the
// calling thread alone: the ops parallelize over their own fixed tasks (thread_pool.hpp), so a
// product never splits its sums differently with the thread count.
void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);

// oneDNN's single-threaded sgemm, and its description ("oneDNN 2.6.3 sgemm, avx512_core JIT");
// defined by gemm_onednn.cpp, or by gemm_onednn_absent.cpp, where they are never reached.
void onednn_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc);
std::string onednn_description();
// Runs every kind of product the ops ask of oneDNN once, on small matrices, so that its kernels are
// built while memory is free: oneDNN generates each kind's code (JIT) on its first product, and
// where that meets an exhausted address space (ulimit -v) its code generator crashes the process
// (oneDNN 2.6) instead of returning dnnl_out_of_memory. select_cpu_kernels calls it.
void prepare_onednn();

}  // namespace dl::cpu
