// blas_control.hpp for the netlib reference CBLAS (meson -Dblas=reference): single-threaded
// loops with nothing to configure. Used where a small, self-contained binary matters more than
// CPU speed (the GPU session kit, scripts/device/build_kit.sh).
#include "backend/cpu/blas_control.hpp"

namespace dl {

std::string configure_blas_for_this_cpu() {
  return "BLAS: reference CBLAS (netlib), single-threaded; build with -Dblas=openblas for speed";
}

void set_blas_threads(int /*threads*/) {}
int blas_threads() {
  return 1;
}

}  // namespace dl
