// backend_op_tests.cpp on the CUDA kernels on the host grid, once per launch limit.
#include "backend/backends_under_test.hpp"
#include "host_grid_backend.hpp"
#include "host_grid_support.hpp"

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  std::vector<BackendUnderTest> list;
  for (const auto& limits : host_grid_limits()) {
    list.push_back({"host grid, " + describe(limits),
                    [limits] { return std::make_unique<test::HostGridBackend>(limits); }});
  }
  return list;
}

}  // namespace dl::testing
