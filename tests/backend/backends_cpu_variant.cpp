// backend_op_tests.cpp and backend_network_tests.cpp on another compiled variant of the CPU
// kernels than the one the build runs (tests/backend/meson.build compiles this file once per
// variant, with -DDL_CPU_ISA naming its namespace): every op against its reference and against
// the picked variant, and random networks' training steps against the picked variant's. A
// portable build runs its narrower variants on CPUs that lack the wider ones (an AVX2 server
// runs x86-64-v3), and only these tests run every op there; cpu_isa_guard.cpp skips the program
// on a CPU that cannot run the variant.
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/isa.hpp"
#include "backend/cpu/kernel_table.hpp"
#include "backends_under_test.hpp"

namespace dl::cpu::DL_CPU_ISA {
extern const KernelTable kKernelTable;
}

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  const cpu::KernelTable& variant = cpu::DL_CPU_ISA::kKernelTable;
  return {{std::string("cpu, the ") + cpu::isa_level_vectors(variant.level) + " kernels",
           [&variant] { return std::make_unique<CpuBackend>(variant); }}};
}

}  // namespace dl::testing
