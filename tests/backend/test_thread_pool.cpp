// parallel_slices: every slice runs exactly once, on as many threads as BLAS has, and the BLAS
// thread count is the same afterwards.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/op_test_support.hpp"

namespace {

using dl::testing::BlasThreads;

constexpr int kCalls = 200;
// parallel_ranges starts its ranges on cache lines (64 bytes) so no two threads share one.
constexpr std::size_t kCacheLineFloats = 16;

}  // namespace

TEST_CASE("parallel_slices runs every slice once, call after call", "[thread_pool]") {
  const int threads = GENERATE(1, 2);
  const int count = GENERATE(1, 2, 3, 7);
  INFO("BLAS threads " << threads << ", slices " << count);
  const BlasThreads blas(threads);
  for (int call = 0; call < kCalls; ++call) {
    std::vector<std::atomic<int>> runs(count);
    dl::cpu::parallel_slices(count, [&](int i) { runs[i].fetch_add(1); });
    for (int i = 0; i < count; ++i) REQUIRE(runs[i].load() == 1);
  }
  CHECK(dl::cpu_threads() == threads);
}

// Helpers that slept (calls further apart than their spin) or were late to a call must neither
// miss a later call nor run a slice of one that has returned: every call's counts are checked
// again at the end, after all calls.
TEST_CASE("parallel_slices with helpers asleep or late runs every slice once", "[thread_pool]") {
  const int threads = GENERATE(2, 3);
  const int count = GENERATE(1, 3, 7);
  INFO("BLAS threads " << threads << ", slices " << count);
  const BlasThreads blas(threads);
  constexpr int kSpacedCalls = 40;
  const auto gap = std::chrono::microseconds(GENERATE(0, 400));
  std::vector<std::vector<std::atomic<int>>> runs(kSpacedCalls);
  for (auto& call : runs) call = std::vector<std::atomic<int>>(count);
  for (auto& call : runs) {
    dl::cpu::parallel_slices(count, [&](int i) { call[i].fetch_add(1); });
    std::this_thread::sleep_for(gap);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (const auto& call : runs) {
    for (const auto& slice : call) REQUIRE(slice.load() == 1);
  }
}

TEST_CASE("parallel_slices uses a second thread when given two", "[thread_pool]") {
  const BlasThreads blas(2);
  std::atomic<int> arrived{0};
  std::set<std::thread::id> ids;
  std::vector<std::thread::id> seen(2);
  // Each slice waits for the other: they can only both finish on two threads.
  dl::cpu::parallel_slices(2, [&](int i) {
    seen[i] = std::this_thread::get_id();
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  ids.insert(seen.begin(), seen.end());
  CHECK(ids.size() == 2);
  CHECK(dl::cpu_threads() == 2);
}

TEST_CASE("parallel_slices from two threads at once runs both calls completely", "[thread_pool]") {
  const BlasThreads blas(2);
  constexpr int kSlices = 4;
  std::vector<std::atomic<int>> a(kSlices), b(kSlices);
  const auto caller = [](std::vector<std::atomic<int>>& runs) {
    for (int call = 0; call < kCalls; ++call) {
      dl::cpu::parallel_slices(kSlices, [&](int i) { runs[i].fetch_add(1); });
    }
  };
  std::thread first(caller, std::ref(a));
  caller(b);
  first.join();
  for (int i = 0; i < kSlices; ++i) {
    CHECK(a[i].load() == kCalls);
    CHECK(b[i].load() == kCalls);
  }
}

TEST_CASE("parallel_ranges covers every element once, in aligned ranges", "[thread_pool]") {
  const int threads = GENERATE(1, 2);
  const std::size_t n = GENERATE(std::size_t{0}, std::size_t{1}, dl::cpu::kMinSlicedElements - 1,
                                 dl::cpu::kMinSlicedElements, 3 * dl::cpu::kMinSlicedElements + 7);
  INFO("BLAS threads " << threads << ", elements " << n);
  const BlasThreads blas(threads);
  std::vector<std::atomic<int>> visits(n);
  std::atomic<int> misaligned{0};
  dl::cpu::parallel_ranges(n, [&](std::size_t begin, std::size_t end) {
    if (begin % kCacheLineFloats != 0) misaligned.fetch_add(1);
    for (std::size_t i = begin; i < end; ++i) visits[i].fetch_add(1);
  });
  CHECK(misaligned.load() == 0);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(visits[i].load() == 1);
  CHECK(dl::cpu_threads() == threads);
}
