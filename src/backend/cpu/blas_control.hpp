// Process-wide control of the BLAS library behind the CPU backend's matrix products. The build
// picks one implementation file (meson option `blas`): blas_control_openblas.cpp for OpenBLAS
// (the default, and the fast one), blas_control_reference.cpp for the netlib reference CBLAS,
// which has no threads and no kernel choice (it keeps self-contained binaries small, see
// docs/DEVICE_SESSION.md).
#pragma once

#include <string>

namespace dl {

// Makes OpenBLAS use the kernels this processor supports. OpenBLAS 0.3.21 (Debian 12) does not
// know newer Xeons (Sapphire Rapids reports as "Prescott") and falls back to SSE3 kernels, 4x
// slower. When OPENBLAS_CORETYPE is unset and the CPU has AVX-512 (or AVX2) but OpenBLAS picked
// an older core, this selects SkylakeX (or Haswell) and reloads OpenBLAS's kernel table.
// Returns a line describing the choice, for the start-up log. Call once, before any BLAS call.
std::string configure_blas_for_this_cpu();

// Sets the number of threads OpenBLAS uses for every later call (process-wide in OpenBLAS's
// pthread build, which is why the trainer sets it once, before workers start). The reference
// CBLAS always runs on the calling thread: there it is a no-op and blas_threads() is 1.
void set_blas_threads(int threads);
int blas_threads();

}  // namespace dl
