#include "gpu_test_support.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include <catch2/catch.hpp>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/random.hpp"
#include "device_query.hpp"

namespace dl::test {

namespace {

struct SkipCounter {
  int skipped = 0;
  std::string reason;
  ~SkipCounter() {
    if (skipped > 0)
      std::printf("tests/cuda: %d [gpu] test case(s) skipped: no CUDA device visible (%s)\n",
                  skipped, reason.c_str());
  }
};

SkipCounter& skip_counter() {
  static SkipCounter counter;
  return counter;
}

}  // namespace

bool gpu_test_can_run() {
  static const gpu::DeviceScan scan = gpu::scan_devices();
  if (!scan.devices.empty()) return true;
  SkipCounter& counter = skip_counter();
  if (counter.skipped++ == 0) {
    counter.reason = scan.problem;
    std::printf("tests/cuda: skipping the [gpu] test cases: no CUDA device visible (%s)\n",
                scan.problem.c_str());
  }
  return false;
}

std::unique_ptr<Backend> make_gpu_backend(int max_grid, int max_block, DType dtype) {
  Config config;
  config.cuda.maximumGridSize = max_grid;
  config.cuda.maximumBlockSize = max_block;
  config.dtype = dtype;
  return make_backend(BackendKind::kCuda, config, 0);
}

std::unique_ptr<Backend> make_gpu_backend(DType dtype) {
  const Config defaults;
  return make_gpu_backend(defaults.cuda.maximumGridSize, defaults.cuda.maximumBlockSize, dtype);
}

std::vector<std::unique_ptr<Backend>> gpu_backends() {
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(make_gpu_backend());
  b.push_back(make_gpu_backend(kTightGrid, kTightBlock));
  return b;
}

CpuBackend& cpu() {
  static CpuBackend backend;
  return backend;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t stream, float scale) {
  constexpr std::uint64_t kSeed = 2024;
  RandomStream rng(kSeed, stream);
  std::vector<float> v(n);
  for (float& x : v) x = scale * static_cast<float>(rng.normal());
  return v;
}

DeviceBuffer<float> unwritten(Backend& b, std::size_t n) {
  DeviceBuffer<float> d(b, n);
  b.fill(d.data(), n, std::numeric_limits<float>::quiet_NaN());
  return d;
}

std::vector<float> unwritten_host(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

void require_close(const std::vector<float>& gpu, const std::vector<float>& cpu,
                   const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double tolerance = kRelativeTolerance * std::max(std::fabs(double{cpu[i]}), 1.0);
    if (!(std::fabs(double{gpu[i]} - double{cpu[i]}) <= tolerance)) {
      INFO(what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i]);
      REQUIRE(std::fabs(double{gpu[i]} - double{cpu[i]}) <= tolerance);
    }
  }
}

}  // namespace dl::test
