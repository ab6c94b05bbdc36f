// What the tests of the GPU collective on the host (cuda/host_emulator with the stand-in NCCL)
// share: per-rank inputs and their sums computed naively, a rank's buffer and stream, threads
// that each play a rank, and environment variables set for one test.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "cuda_check.hpp"

namespace dl::test {

// Three rounds of the stand-in's chunks (16384 floats), the last one partial.
constexpr std::size_t kStandinCount = 2 * 16384 + 123;
// What "bounded" means in these tests: far more than any of them takes on a loaded 2-core
// machine, far less than meson's timeout, so a hang fails an assertion rather than the suite.
constexpr auto kBounded = std::chrono::seconds(10);

// Rank `rank`'s values in round `round`: magnitudes that differ by rank, so that the order of
// the additions changes the bits and an exact comparison means the order was rank order.
inline std::vector<float> rank_values(int rank, int round, std::size_t n = kStandinCount) {
  std::vector<float> v(n);
  std::uint64_t state = 0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(rank * 31 + round + 1);
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float unit = static_cast<float>(state >> 40) / static_cast<float>(1ull << 24);
    v[i] = (unit - 0.5f) * static_cast<float>(1 + 1000 * rank);
  }
  return v;
}

// ((v[order[0]] + v[order[1]]) + v[order[2]]) ... element by element, in float.
inline std::vector<float> naive_sum(const std::vector<std::vector<float>>& values) {
  std::vector<float> sum = values.front();
  for (std::size_t r = 1; r < values.size(); ++r) {
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[r][i];
  }
  return sum;
}

// One rank's "device" buffer, its stream and an event recorded after its collective.
struct RankBuffer {
  explicit RankBuffer(std::size_t count = kStandinCount) : n(count) {
    DL_CUDA_CALL(cudaStreamCreate(&stream));
    DL_CUDA_CALL(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    void* p = nullptr;
    DL_CUDA_CALL(cudaMalloc(&p, n * sizeof(float)));
    data = static_cast<float*>(p);
  }
  ~RankBuffer() {
    (void)cudaFree(data);
    (void)cudaEventDestroy(done);
    (void)cudaStreamDestroy(stream);
  }
  RankBuffer(const RankBuffer&) = delete;
  RankBuffer& operator=(const RankBuffer&) = delete;

  // Queued on the stream, as the trainer's uploads are.
  void upload(const std::vector<float>& v) {
    DL_CUDA_CALL(
        cudaMemcpyAsync(data, v.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    DL_CUDA_CALL(cudaStreamSynchronize(stream));  // `v` may go away after this
  }
  std::vector<float> download() {
    std::vector<float> v(n);
    DL_CUDA_CALL(cudaStreamSynchronize(stream));
    DL_CUDA_CALL(cudaMemcpy(v.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }

  std::size_t n;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  float* data = nullptr;
};

// Runs body(r) for r in [0, count) on threads of their own and rethrows the first failure.
// Catch2's assertions are not thread-safe: bodies record, the test thread checks.
inline void on_threads(int count, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (int r = 0; r < count; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        failures[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) {
    if (f != nullptr) std::rethrow_exception(f);
  }
}

// Sets an environment variable for the life of the object (tests set them before any thread
// that reads them starts).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) {
      previous_ = old;
      had_ = true;
    }
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, previous_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string previous_;
  bool had_ = false;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dl::test
