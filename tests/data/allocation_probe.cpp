#include "allocation_probe.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> g_largest{0};
std::atomic<std::size_t> g_live{0};
std::atomic<std::size_t> g_peak{0};

// Each block starts with its size, so that the unsized deletes can count what they free; 16
// bytes keep the block's malloc alignment (__STDCPP_DEFAULT_NEW_ALIGNMENT__).
constexpr std::size_t kHeader = 16;

void raise_to(std::atomic<std::size_t>& value, std::size_t n) {
  std::size_t seen = value.load(std::memory_order_relaxed);
  while (n > seen && !value.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
  }
}

void* allocate(std::size_t n) noexcept {
  raise_to(g_largest, n);
  if (n > static_cast<std::size_t>(-1) - kHeader) return nullptr;
  void* block = std::malloc(n + kHeader);
  if (block == nullptr) return nullptr;
  *static_cast<std::size_t*>(block) = n;
  raise_to(g_peak, g_live.fetch_add(n) + n);
  return static_cast<char*>(block) + kHeader;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  char* block = static_cast<char*>(p) - kHeader;
  g_live.fetch_sub(*reinterpret_cast<std::size_t*>(block));
  std::free(block);
}
}  // namespace

// The array forms are replaced too, so that every new/delete pair uses allocate/release
// (sanitizers check that the pairs match).
void* operator new(std::size_t n) {
  if (void* p = allocate(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
// The nothrow forms too (Catch2 allocates its test invokers with them): left to the sanitizer's
// operator new, their blocks would reach release() above and be reported as mismatched.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}

namespace dl::test {
void reset_largest_allocation() {
  g_largest.store(0);
}
std::size_t largest_allocation() {
  return g_largest.load();
}
std::size_t live_bytes() {
  return g_live.load();
}
void reset_peak_live_bytes() {
  g_peak.store(g_live.load());
}
std::size_t peak_live_bytes() {
  return g_peak.load();
}
}  // namespace dl::test
