// The namespace that holds one compiled variant of the CPU backend's own kernels. The build
// compiles those sources once per x86-64 level (meson option native_cpu=false; src/backend/cpu/
// meson.build) with -DDL_CPU_ISA naming the variant's namespace, so one binary links all of them
// and isa.hpp picks one at start-up. Code outside the variants (the tests, the CPU backend's
// dispatch) sees the variant the rest of the build is compiled for, DL_CPU_ISA_DEFAULT.
#pragma once

#if !defined(DL_CPU_ISA)
#if !defined(DL_CPU_ISA_DEFAULT)
#error "DL_CPU_ISA_DEFAULT is set by backend_dep (src/backend/cpu/meson.build): depend on it"
#endif
#define DL_CPU_ISA DL_CPU_ISA_DEFAULT
#endif
