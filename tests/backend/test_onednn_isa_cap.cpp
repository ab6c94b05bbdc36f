// DL_CPU_ISA caps oneDNN's JIT as well as our own kernels (gemm_onednn.cpp), so that a capped run
// stands in for a CPU of that level as a whole. A program of its own: the cap must be set before
// the process's first oneDNN product, which no other test may have made.
#include <dnnl.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/gemm.hpp"

TEST_CASE("DL_CPU_ISA=avx2 caps oneDNN's JIT at AVX2, and its products stay right",
          "[backend][isa]") {
  setenv("DL_CPU_ISA", "avx2", 1);
  unsetenv("DNNL_MAX_CPU_ISA");
  unsetenv("ONEDNN_MAX_CPU_ISA");
  const std::string description = dl::cpu::onednn_description();
  INFO(description);
  // oneDNN's levels are masks of their features: AVX2's holds every narrower one's.
  const unsigned effective = dnnl_get_effective_cpu_isa();
  CHECK((effective & ~static_cast<unsigned>(dnnl_cpu_isa_avx2)) == 0);
  CHECK(description.find("avx512") == std::string::npos);

  // C[2x3] = A[2x4] B[4x3], against the sums written out.
  const std::vector<float> a = {1, 2, 3, 4, -1, 0.5f, 2, -3};
  const std::vector<float> b = {1, 0, 2, -1, 3, 1, 0.5f, 2, -2, 4, 1, 0};
  std::vector<float> c(6, 0.0f);
  dl::cpu::onednn_sgemm(false, false, 2, 3, 4, 1.0f, a.data(), 4, b.data(), 3, 0.0f, c.data(), 3);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float want = 0.0f;
      for (int k = 0; k < 4; ++k) want += a[i * 4 + k] * b[k * 3 + j];
      CHECK(std::fabs(c[i * 3 + j] - want) <= 1e-5f);
    }
  }
}
