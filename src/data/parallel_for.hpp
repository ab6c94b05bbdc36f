// The data readers' thread pool: decoding images and parsing CSV rows, one thread per core.
// Each index is handed out once and its result goes to its own slot, so what is read does not
// depend on the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace dl {

// Calls work(i) for every i in [0, count) on min(cores, count) threads (this one included);
// work returns false to stop the others from starting further indices (a fatal bad file).
template <class Work>
void parallel_for_each_index(std::size_t count, Work work) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  auto run = [&] {
    for (std::size_t i = next++; i < count && !stop; i = next++)
      if (!work(i)) stop = true;
  };
  const std::size_t threads = std::max<std::size_t>(
      1, std::min<std::size_t>(std::thread::hardware_concurrency(), count));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
}

}  // namespace dl
