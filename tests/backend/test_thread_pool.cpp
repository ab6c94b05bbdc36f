// parallel_slices: every slice runs exactly once, on as many threads as BLAS has, and the BLAS
// thread count is the same afterwards.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
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

TEST_CASE("parallel_elementwise covers every element once, in more ranges for more threads",
          "[thread_pool]") {
  const int threads = GENERATE(1, 2, 16);
  const std::size_t n = GENERATE(std::size_t{0}, dl::cpu::kMinSlicedElements - 1,
                                 dl::cpu::kMinSlicedElements, 16 * dl::cpu::kRangeFloats + 7);
  INFO("BLAS threads " << threads << ", elements " << n);
  const BlasThreads blas(threads);
  std::vector<std::atomic<int>> visits(n);
  std::atomic<int> misaligned{0}, ranges{0}, short_ranges{0};
  dl::cpu::parallel_elementwise(n, [&](std::size_t begin, std::size_t end) {
    if (begin % kCacheLineFloats != 0) misaligned.fetch_add(1);
    ranges.fetch_add(1);
    // Every range but the last is at least kLeastElementwiseFloats long.
    if (end < n && end - begin < dl::cpu::kLeastElementwiseFloats) short_ranges.fetch_add(1);
    for (std::size_t i = begin; i < end; ++i) visits[i].fetch_add(1);
  });
  CHECK(misaligned.load() == 0);
  CHECK(short_ranges.load() == 0);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(visits[i].load() == 1);
  if (n >= 16 * dl::cpu::kRangeFloats) {
    // 17 ranges of kRangeFloats where they give every thread kTasksPerThread; on 16 threads
    // shorter ones, kTasksPerThread per thread (one more for what rounding to lines leaves).
    const int fill = threads * dl::cpu::kTasksPerThread;
    if (fill <= 17) {
      CHECK(ranges.load() == 17);
    } else {
      CHECK(ranges.load() >= fill);
      CHECK(ranges.load() <= fill + 1);
    }
  }
}

TEST_CASE("items_per_task fills the threads between least and preferred", "[thread_pool]") {
  const struct {
    int threads;
    std::size_t items, preferred, least, expected;
  } cases[] = {
      {1, 1000, 64, 8, 64},    // one thread: the preferred size
      {2, 1000, 64, 8, 64},    // 16 tasks of 64 already fill 2 threads twice
      {16, 1000, 64, 8, 32},   // 32 tasks for 16 threads
      {64, 1000, 64, 8, 8},    // 125 tasks of the least size for 128 wanted
      {64, 100, 64, 8, 8},     // never under the least
      {2, 100, 64, 200, 64},   // a least over the preferred gives the preferred
      {16, 0, 64, 8, 8},       // no items: still a size a caller can divide by
  };
  for (const auto& c : cases) {
    INFO("threads " << c.threads << ", items " << c.items << ", preferred " << c.preferred
                    << ", least " << c.least);
    const BlasThreads blas(c.threads);
    CHECK(dl::cpu::items_per_task(c.items, c.preferred, c.least) == c.expected);
  }
}

// Memory a library could not allocate inside a task: thrown on a helper it ended the process
// (std::terminate), thrown on the caller it left the call while the helper still ran it. The
// call rethrows it on the caller, and the pool, the caller's included, serves the next call on
// both threads.
TEST_CASE("parallel_slices rethrows a slice's exception on the caller and goes on serving",
          "[thread_pool]") {
  const BlasThreads blas(2);
  const bool throw_on_helper = GENERATE(true, false);
  INFO((throw_on_helper ? "thrown on the helper" : "thrown on the caller"));
  const std::thread::id caller = std::this_thread::get_id();
  // Two slices that wait for each other run on two threads; kWait bounds the wait, so a pool
  // that ran them on one thread fails the check below instead of hanging.
  constexpr auto kWait = std::chrono::seconds(5);
  const auto meet = [&](std::atomic<int>& arrived) {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    return arrived.load() == 2;
  };
  std::atomic<int> arrived{0};
  std::vector<std::atomic<int>> runs(2);
  CHECK_THROWS_WITH(dl::cpu::parallel_slices(2,
                                             [&](int i) {
                                               runs[i].fetch_add(1);
                                               meet(arrived);
                                               const bool on_caller =
                                                   std::this_thread::get_id() == caller;
                                               if (on_caller != throw_on_helper)
                                                 throw std::runtime_error("planted");
                                             }),
                    "planted");
  CHECK(runs[0].load() == 1);
  CHECK(runs[1].load() == 1);
  std::atomic<int> met{0}, arrived_again{0};
  dl::cpu::parallel_slices(2, [&](int) {
    if (meet(arrived_again)) met.fetch_add(1);
  });
  CHECK(met.load() == 2);
}
