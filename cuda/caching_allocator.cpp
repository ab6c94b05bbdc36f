#include "caching_allocator.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/out_of_memory.hpp"

namespace dl::gpu {

namespace {

std::size_t round_up(std::size_t n, std::size_t step) {
  const std::size_t remainder = n % step;
  if (remainder == 0) return n;
  // A request within one step of SIZE_MAX cannot be rounded; the raw allocator will refuse it.
  if (n > std::numeric_limits<std::size_t>::max() - (step - remainder)) return n;
  return n + (step - remainder);
}

std::size_t highest_power_of_two_at_most(std::size_t n) {
  std::size_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace

std::size_t size_class(std::size_t bytes) {
  if (bytes <= kSmallClassLimit) return std::max(kSmallClassStep, round_up(bytes, kSmallClassStep));
  const std::size_t granule = highest_power_of_two_at_most(bytes) / kClassesPerDoubling;
  return round_up(bytes, granule);
}

CachingAllocator::CachingAllocator(RawAllocator& raw, CacheLimits limits)
    : raw_(raw), limits_(limits) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
  for (const auto& [block, size] : in_use_) {
    (void)size;
    raw_.free(block);
  }
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto cached = free_blocks_.find(size);
  if (cached != free_blocks_.end() && !cached->second.empty()) {
    void* block = cached->second.back();
    cached->second.pop_back();
    stats_.bytes_cached -= size;
    ++stats_.hits;
    in_use_.emplace(block, size);
    stats_.bytes_in_use += size;
    note_peaks();
    return block;
  }
  ++stats_.misses;
  void* block = raw_.allocate(size);
  if (block == nullptr && stats_.bytes_cached > 0) {
    // The driver is out of memory while we hold idle blocks: give them back and retry once.
    ++stats_.flushes;
    flush_locked();
    block = raw_.allocate(size);
  }
  if (block == nullptr) {
    throw OutOfMemoryError(size, raw_.name() + " (" + format_bytes(stats_.bytes_in_use) +
                                     " in use by this process, nothing cached)");
  }
  in_use_.emplace(block, size);
  stats_.bytes_in_use += size;
  stats_.bytes_from_raw += size;
  note_peaks();
  return block;
}

void CachingAllocator::release(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = in_use_.find(p);
  DL_CHECK(it != in_use_.end(), raw_.name() + ": release of a block this cache did not hand out");
  const std::size_t size = it->second;
  in_use_.erase(it);
  stats_.bytes_in_use -= size;
  const bool too_long = size > limits_.max_cacheable_length;
  const bool cache_full = stats_.bytes_cached + size > limits_.max_cached_bytes;
  if (too_long || cache_full) {
    ++stats_.not_cached;
    stats_.bytes_from_raw -= size;
    raw_.free(p);
    return;
  }
  free_blocks_[size].push_back(p);
  stats_.bytes_cached += size;
  note_peaks();
}

void CachingAllocator::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
}

void CachingAllocator::flush_locked() {
  for (auto& [size, blocks] : free_blocks_) {
    for (void* block : blocks) {
      raw_.free(block);
      stats_.bytes_from_raw -= size;
    }
  }
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

void CachingAllocator::note_peaks() {
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  stats_.peak_bytes_cached = std::max(stats_.peak_bytes_cached, stats_.bytes_cached);
  stats_.peak_bytes_from_raw = std::max(stats_.peak_bytes_from_raw, stats_.bytes_from_raw);
}

CacheStatistics CachingAllocator::statistics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::string CachingAllocator::report() const {
  const CacheStatistics s = statistics();
  return raw_.name() + " cache: " + std::to_string(s.hits) + " hits, " + std::to_string(s.misses) +
         " misses, " + std::to_string(s.not_cached) + " frees not cached, " +
         std::to_string(s.flushes) + " flushes; peak in use " + format_bytes(s.peak_bytes_in_use) +
         ", peak held " + format_bytes(s.peak_bytes_from_raw) + ", cached now " +
         format_bytes(s.bytes_cached) + " (limits: blocks up to " +
         format_bytes(limits_.max_cacheable_length) + ", " +
         format_bytes(limits_.max_cached_bytes) + " in all)";
}

}  // namespace dl::gpu
