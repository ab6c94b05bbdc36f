// gemm.hpp's oneDNN half for a build without oneDNN (meson option onednn): select_cpu_kernels
// never picks it, so the product below is unreachable.
#include "backend/cpu/gemm.hpp"
#include "core/error.hpp"

namespace dl {

bool onednn_built() {
  return false;
}

}  // namespace dl

namespace dl::cpu {

void onednn_sgemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float,
                  float*, int) {
  throw InternalError("oneDNN sgemm called in a build without oneDNN");
}

void prepare_onednn() {}

std::string onednn_description() {
  return "oneDNN (not built)";
}

}  // namespace dl::cpu
