// backend_op_tests.cpp on the CPU backend.
#include "backend/cpu/cpu_backend.hpp"
#include "backends_under_test.hpp"

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  return {{"cpu", [] { return std::make_unique<CpuBackend>(); }}};
}

}  // namespace dl::testing
