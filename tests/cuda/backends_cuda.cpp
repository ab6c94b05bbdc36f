// backend_op_tests.cpp on the CUDA backend, with default and with tight launch limits, when a
// device is visible; none otherwise (gpu_test_can_run says why, once).
#include "backend/backends_under_test.hpp"
#include "gpu_test_support.hpp"

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  // Asked once: each call of gpu_test_can_run without a device counts a skipped case.
  static const bool can_run = test::gpu_test_can_run();
  if (!can_run) return {};
  return {
      {"cuda", [] { return test::make_gpu_backend(); }},
      {"cuda, tight launch limits",
       [] { return test::make_gpu_backend(test::kTightGrid, test::kTightBlock); }},
      {"cuda HALF", [] { return test::make_gpu_backend(DType::kHalf); }, DType::kHalf},
      {"cuda BFLOAT16", [] { return test::make_gpu_backend(DType::kBFloat16); }, DType::kBFloat16}};
}

}  // namespace dl::testing
