// For a test binary of one variant of the CPU kernels (tests/backend/meson.build): compiled for
// the plain x86-64 level, it ends the process with the skip code 77 before any test runs when this
// CPU cannot run the variant (its initializer runs before the other files' ones).
#include <cstdio>
#include <cstdlib>

#include "backend/cpu/isa.hpp"
#include "backend/cpu/kernel_table.hpp"

namespace dl::cpu::DL_CPU_ISA {
extern const KernelTable kKernelTable;
}

namespace {

struct SkipUnlessRunnable {
  SkipUnlessRunnable() {
    const dl::cpu::IsaLevel needed = dl::cpu::DL_CPU_ISA::kKernelTable.level;
    if (dl::cpu::detect_cpu_isa() >= needed) return;
    std::fprintf(stderr, "skipped: this CPU does not run %s, which these kernels need\n",
                 dl::cpu::isa_level_vectors(needed));
    std::exit(77);
  }
};
const SkipUnlessRunnable guard __attribute__((init_priority(101)));

}  // namespace
