// The data readers' thread pool: decoding images and parsing CSV rows, one thread per CPU this
// process may use (its affinity mask and cgroup quota: core/cpu_limits.hpp), not per CPU of the
// machine, so a Slurm cpuset or a Kubernetes CPU limit bounds it too.
// Each index is handed out once and its result goes to its own slot, so what is read does not
// depend on the thread count. A stop signal watched while the data are read (stop_request.hpp)
// ends the loop before its next index and throws StopRequested once the threads are joined.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_limits.hpp"
#include "core/stop_request.hpp"
#include "core/thread_start.hpp"

namespace dl {

// The threads parallel_for_each_index runs `count` indices on (this one included): one per CPU
// this process may use, at most one per index.
inline std::size_t data_reader_threads(std::size_t count) {
  static const std::size_t cpus = static_cast<std::size_t>(usable_cpus(read_cpu_limits()));
  return std::max<std::size_t>(1, std::min(cpus, count));
}

// How a refused start names the t-th helper (t >= 1; the calling thread is the 0th).
inline std::string data_reader_thread_name(std::size_t t) {
  return "data reader thread " + std::to_string(t);
}

// Calls work(i) for every i in [0, count) on min(cores, count) threads (this one included);
// work returns false to stop the others from starting further indices (a fatal bad file).
// StopRequested where a watched stop signal came (stop_request.hpp), whether or not every index
// was done.
template <class Work>
void parallel_for_each_index(std::size_t count, Work work) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  auto run = [&] {
    for (std::size_t i = next++; i < count && !stop; i = next++)
      if (stop_requested() != 0 || !work(i)) stop = true;
  };
  const std::size_t threads = data_reader_threads(count);
  std::vector<std::thread> pool;
  try {
    for (std::size_t t = 1; t < threads; ++t)
      pool.push_back(start_thread(data_reader_thread_name(t), run));
  } catch (const ThreadStartError&) {
    stop = true;  // the started threads end after their current index; none may stay joinable
    for (std::thread& t : pool) t.join();
    throw;
  }
  run();
  for (std::thread& t : pool) t.join();
  throw_if_stop_requested();
}

}  // namespace dl
