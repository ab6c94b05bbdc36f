// Which compiled variant of the CPU backend's own kernels (convolutions, pooling, elementwise ops,
// updaters; not the matrix products, which oneDNN or the CBLAS choose for themselves) this process
// runs. A portable build (meson option native_cpu=false) compiles them once per x86-64 level, and
// the widest level this CPU and its OS run is taken at start-up: from the processor's feature
// bits (cpuid) and the register state the OS saves (XCR0), never from a table of processor
// models. DL_CPU_ISA caps the choice, and oneDNN's JIT with it (gemm_onednn.cpp), for tests and
// comparisons. A native build has one variant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dl::cpu {

// The x86-64 psABI levels the variants are compiled for (-march=x86-64, x86-64-v3, x86-64-v4).
enum class IsaLevel { kX86_64 = 1, kAvx2 = 3, kAvx512 = 4 };

struct KernelTable;  // kernel_table.hpp

struct IsaVariant {
  const char* name;  // "x86-64-v3", or "native" in a -Dnative_cpu=true build
  const KernelTable* kernels;
};

// The variants this build compiled, narrowest first (isa_variants.cpp, written by meson).
const std::vector<IsaVariant>& compiled_isa_variants();

// The widest level this CPU runs: its cpuid feature bits, with AVX and AVX-512 counted only where
// the OS saves their registers (XCR0).
IsaLevel detect_cpu_isa();

// "AVX-512", "AVX2", "SSE2": the vectors a level adds, for messages.
const char* isa_level_vectors(IsaLevel level);

// A DL_CPU_ISA value: x86-64, avx2 or avx512 (or the level names x86-64-v3, x86-64-v4). Throws
// ConfigError naming the values.
IsaLevel parse_isa_cap(std::string_view value);
// The environment's DL_CPU_ISA (unset or empty: no cap); throws as parse_isa_cap.
std::optional<IsaLevel> isa_cap_from_environment();
// The spelling DL_CPU_ISA's messages show a level by: "x86-64", "avx2", "avx512".
const char* isa_cap_name(IsaLevel level);

// The widest variant whose level is at most both `cpu` and `cap`. Throws ConfigError naming the
// fix where none is.
const IsaVariant& choose_isa_variant(const std::vector<IsaVariant>& variants, IsaLevel cpu,
                                     std::optional<IsaLevel> cap);

// The process's variant, chosen on the first call from detect_cpu_isa() and the environment's
// DL_CPU_ISA (unset or empty: no cap); throws ConfigError as choose_isa_variant, again on each
// call while the choice fails.
const IsaVariant& selected_isa_variant();

// For the start-up line that names the CPU kernels: "own kernels: x86-64-v4 (AVX-512)", with the
// cap when DL_CPU_ISA set one. Throws as selected_isa_variant.
std::string describe_cpu_isa();

}  // namespace dl::cpu
