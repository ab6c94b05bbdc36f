// backend_op_tests.cpp on the CUDA kernels on the host grid, with the default launch limits and
// tight ones (3 blocks of 100 threads: grid-stride loops iterate, reduction blocks round to whole
// warps). The other limits of host_grid_limits() run every kernel in cuda_kernels_on_host*.cpp;
// here each finite-difference step would run them all again, and 1024-thread blocks of fibers
// cost seconds.
#include "backend/backends_under_test.hpp"
#include "host_grid_backend.hpp"
#include "host_grid_support.hpp"

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  std::vector<BackendUnderTest> list;
  for (const gpu::LaunchLimits limits : {gpu::LaunchLimits{}, gpu::LaunchLimits{3, 100}}) {
    list.push_back({"host grid, " + describe(limits),
                    [limits] { return std::make_unique<test::HostGridBackend>(limits); }});
  }
  // The 16-bit products, with tight limits so the cast kernels' loops iterate.
  for (const DType dtype : {DType::kHalf, DType::kBFloat16}) {
    const gpu::LaunchLimits tight{3, 100};
    list.push_back(
        {"host grid, tight limits, " + std::string(dtype == DType::kHalf ? "HALF" : "BFLOAT16"),
         [tight, dtype] {
           return std::make_unique<test::HostGridBackend>(tight, gpu::half_format_of(dtype));
         },
         dtype});
  }
  return list;
}

}  // namespace dl::testing
