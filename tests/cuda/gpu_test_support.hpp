// Shared by the [gpu] test cases: whether a CUDA device is visible (skipping, and saying so once,
// when not), device buffers filled from host vectors, and the comparison with the CPU backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/device_buffer.hpp"
#include "config/config.hpp"

namespace dl {
class CpuBackend;
}

namespace dl::test {

// False when no CUDA device is visible; the first such call prints why, and the number of
// [gpu] test cases skipped is printed when the test program exits.
bool gpu_test_can_run();

// Launch limits other than the defaults: a tiny grid forces every grid-stride loop to iterate,
// and a block that is not a whole number of warps exercises the reductions' rounding.
inline constexpr int kTightGrid = 3;
inline constexpr int kTightBlock = 100;

// A CUDA backend on device 0 with the given launch limits and precision (Config::dtype).
std::unique_ptr<Backend> make_gpu_backend(int max_grid, int max_block, DType dtype = DType::kFloat);
std::unique_ptr<Backend> make_gpu_backend(DType dtype = DType::kFloat);
// The default launch limits and the tight ones, in float32.
std::vector<std::unique_ptr<Backend>> gpu_backends();
// The CPU backend the [gpu] cases compare with.
CpuBackend& cpu();

// Normally distributed values (scaled), reproducible from `stream`.
std::vector<float> random_floats(std::size_t n, std::uint64_t stream, float scale = 1.0f);

template <typename T>
DeviceBuffer<T> to_device(Backend& b, const std::vector<T>& host) {
  DeviceBuffer<T> d(b, host.size());
  b.upload(d.data(), host.data(), host.size() * sizeof(T));
  return d;
}

// An output buffer filled with NaN, so that an element the op fails to write cannot match.
DeviceBuffer<float> unwritten(Backend& b, std::size_t n);
std::vector<float> unwritten_host(std::size_t n);

template <typename T>
std::vector<T> to_host(Backend& b, const DeviceBuffer<T>& d) {
  std::vector<T> host(d.size());
  b.download(host.data(), d.data(), d.size() * sizeof(T));
  return host;
}

// Every gpu[i] within kRelativeTolerance * max(|cpu[i]|, 1) of cpu[i] (inputs are O(1), so the
// floor is an absolute tolerance for values near zero); NaN never matches.
inline constexpr double kRelativeTolerance = 1e-4;
void require_close(const std::vector<float>& gpu, const std::vector<float>& cpu,
                   const std::string& what);

}  // namespace dl::test

#define SKIP_WITHOUT_GPU()                       \
  do {                                           \
    if (!::dl::test::gpu_test_can_run()) return; \
  } while (0)
