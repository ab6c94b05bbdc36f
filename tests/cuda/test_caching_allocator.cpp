// The caching allocator's policy (cuda/caching_allocator.hpp) on a fake raw allocator: size
// classes, reuse, DL4J's two limits, the flush-and-retry on out-of-memory, and the statistics.
// Runs on any machine: no CUDA call is made.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "caching_allocator.hpp"
#include "core/error.hpp"

namespace {

using dl::gpu::CacheLimits;
using dl::gpu::CachingAllocator;
using dl::gpu::size_class;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

// Hands out distinct fake addresses (never dereferenced) and can run out of memory: it refuses
// any allocation that would make its outstanding bytes exceed `capacity`.
class FakeRaw final : public dl::gpu::RawAllocator {
 public:
  explicit FakeRaw(std::size_t capacity = SIZE_MAX) : capacity_(capacity) {}
  void* allocate(std::size_t bytes) override {
    ++allocations;
    if (bytes > capacity_ - outstanding_bytes) return nullptr;
    outstanding_bytes += bytes;
    next_ += bytes + kGap;
    void* p = reinterpret_cast<void*>(next_);
    sizes_[p] = bytes;
    return p;
  }
  void free(void* p) override {
    ++frees;
    REQUIRE(sizes_.count(p) == 1);
    outstanding_bytes -= sizes_[p];
    sizes_.erase(p);
  }
  std::string name() const override { return "fake memory"; }
  std::size_t outstanding_blocks() const { return sizes_.size(); }

  int allocations = 0;
  int frees = 0;
  std::size_t outstanding_bytes = 0;

 private:
  static constexpr std::uintptr_t kGap = 4096;
  std::size_t capacity_;
  std::uintptr_t next_ = 1 << 20;
  std::map<void*, std::size_t> sizes_;
};

CacheLimits limits(std::size_t cacheable, std::size_t total) {
  return CacheLimits{cacheable, total};
}

}  // namespace

TEST_CASE("size classes cover the request with bounded waste", "[caching_allocator]") {
  CHECK(size_class(0) == dl::gpu::kSmallClassStep);
  CHECK(size_class(1) == dl::gpu::kSmallClassStep);
  CHECK(size_class(512) == 512);
  CHECK(size_class(513) == 1024);
  CHECK(size_class(kMiB) == kMiB);
  CHECK(size_class(4 * kMiB) == 4 * kMiB);  // powers of two are classes themselves
  // The classes test_cuda_ops.cpp's cache-reuse case relies on: 512-byte steps below 1 MiB.
  CHECK(size_class(12345) == 12800);
  CHECK(size_class(12000) == 12288);
  CHECK(size_class(12799) == 12800);
  std::size_t previous = 0;
  for (std::size_t bytes = 1; bytes < 64 * kMiB; bytes = bytes * 3 / 2 + 7) {
    const std::size_t c = size_class(bytes);
    INFO("bytes " << bytes << " class " << c);
    REQUIRE(c >= bytes);
    REQUIRE(c >= previous);  // monotone
    if (bytes > dl::gpu::kSmallClassLimit) {
      REQUIRE(static_cast<double>(c) <= static_cast<double>(bytes) * 1.125);
    } else {
      REQUIRE(c - bytes < dl::gpu::kSmallClassStep);
    }
    previous = c;
  }
}

TEST_CASE("a freed block is handed out again for the same size class", "[caching_allocator]") {
  FakeRaw raw;
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  void* a = cache.allocate(1000);
  cache.release(a);
  void* b = cache.allocate(1020);  // same 1024-byte class
  CHECK(b == a);
  void* c = cache.allocate(3000);  // another class: a new block
  CHECK(c != a);
  CHECK(raw.allocations == 2);
  const dl::gpu::CacheStatistics s = cache.statistics();
  CHECK(s.hits == 1);
  CHECK(s.misses == 2);
  CHECK(s.bytes_in_use == 1024 + 3072);
  CHECK(s.bytes_cached == 0);
}

TEST_CASE("blocks above the cacheable length go back to the raw allocator", "[caching_allocator]") {
  FakeRaw raw;
  CachingAllocator cache(raw, limits(64 * kKiB, 8 * kMiB));
  void* small = cache.allocate(64 * kKiB);
  void* large = cache.allocate(64 * kKiB + 1);
  cache.release(small);
  cache.release(large);
  CHECK(raw.frees == 1);  // the large one
  CHECK(cache.statistics().not_cached == 1);
  CHECK(cache.statistics().bytes_cached == 64 * kKiB);
  CHECK(raw.outstanding_bytes == 64 * kKiB);
}

TEST_CASE("the cache never holds more than its total limit", "[caching_allocator]") {
  FakeRaw raw;
  constexpr std::size_t kBlock = 256 * kKiB;
  CachingAllocator cache(raw, limits(kMiB, 3 * kBlock));
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(cache.allocate(kBlock));
  for (void* b : blocks) cache.release(b);
  const dl::gpu::CacheStatistics s = cache.statistics();
  CHECK(s.bytes_cached == 3 * kBlock);
  CHECK(s.not_cached == 2);
  CHECK(raw.frees == 2);
  CHECK(s.peak_bytes_in_use == 5 * kBlock);
  CHECK(s.peak_bytes_from_raw == 5 * kBlock);
  CHECK(s.bytes_from_raw == 3 * kBlock);
  // The three cached blocks serve the next three requests without the raw allocator.
  for (int i = 0; i < 3; ++i) cache.allocate(kBlock);
  CHECK(raw.allocations == 5);
  CHECK(cache.statistics().hits == 3);
}

TEST_CASE("out of memory flushes the cache and retries once", "[caching_allocator]") {
  constexpr std::size_t kBlock = 512 * kKiB;
  FakeRaw raw(3 * kBlock);
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  void* a = cache.allocate(kBlock);
  void* b = cache.allocate(kBlock);
  cache.release(a);
  cache.release(b);
  // A different class that needs the memory the two cached blocks hold.
  void* c = cache.allocate(2 * kBlock);
  CHECK(c != nullptr);
  const dl::gpu::CacheStatistics s = cache.statistics();
  CHECK(s.flushes == 1);
  CHECK(s.bytes_cached == 0);
  CHECK(raw.outstanding_bytes == 2 * kBlock);
}

TEST_CASE("out of memory with nothing cached throws a message naming the memory",
          "[caching_allocator]") {
  FakeRaw raw(kMiB);
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  cache.allocate(kMiB);
  try {
    cache.allocate(kKiB);
    FAIL("allocation beyond the capacity succeeded");
  } catch (const dl::Error& e) {
    const std::string message = e.what();
    CHECK(message.find("fake memory") != std::string::npos);
    CHECK(message.find("out of memory") != std::string::npos);
    CHECK(e.code() == dl::ExitCode::kOutOfMemory);
  }
}

TEST_CASE("releasing a foreign pointer is an internal error; null is ignored",
          "[caching_allocator]") {
  FakeRaw raw;
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  int not_from_the_cache = 0;
  CHECK_THROWS_AS(cache.release(&not_from_the_cache), dl::InternalError);
  CHECK_NOTHROW(cache.release(nullptr));
}

TEST_CASE("destruction returns every block, cached or still in use", "[caching_allocator]") {
  FakeRaw raw;
  {
    CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
    void* kept = cache.allocate(10 * kKiB);
    void* freed = cache.allocate(20 * kKiB);
    cache.release(freed);
    CHECK(kept != nullptr);
    CHECK(raw.outstanding_blocks() == 2);
  }
  CHECK(raw.outstanding_blocks() == 0);
  CHECK(raw.outstanding_bytes == 0);
}

TEST_CASE("zero-byte requests get distinct usable blocks", "[caching_allocator]") {
  FakeRaw raw;
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  std::set<void*> seen;
  for (int i = 0; i < 3; ++i) seen.insert(cache.allocate(0));
  CHECK(seen.size() == 3);
  CHECK(seen.count(nullptr) == 0);
}

TEST_CASE("the report states hits, misses and limits", "[caching_allocator]") {
  FakeRaw raw;
  CachingAllocator cache(raw, limits(kMiB, 8 * kMiB));
  cache.release(cache.allocate(100));
  cache.allocate(100);
  const std::string report = cache.report();
  INFO(report);
  CHECK(report.find("fake memory") != std::string::npos);
  CHECK(report.find("1 hits") != std::string::npos);
  CHECK(report.find("1 misses") != std::string::npos);
  CHECK(report.find("1.0 MiB") != std::string::npos);
  CHECK(report.find("8.0 MiB") != std::string::npos);
}
