// The backends the op tests over backends (backend_op_tests.cpp) run on. Each test program that
// compiles those tests defines backends_under_test(): the CPU backend and each other variant of
// its kernels (tests/backend: backends_cpu.cpp, backends_cpu_variant.cpp), the CUDA
// kernels on the host grid under several launch limits (tests/cuda, cuda_kernels_on_host), and
// the CUDA backend when a device is visible (tests/cuda, test_cuda_backend; none otherwise, and
// the program says why). The CUDA programs add backends whose products (convolution, dense) run
// in HALF or BFLOAT16; only the product tests (backend_op_tests_16bit.cpp) take those, since no
// other op depends on the dtype.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/kinds.hpp"

namespace dl::testing {

struct BackendUnderTest {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
  DType products = DType::kFloat;  // the format the products round their inputs to
};

std::vector<BackendUnderTest> backends_under_test();

}  // namespace dl::testing
