// Timing of single backend calls, shared by the op benchmarks (cpu_step_profile, batchnorm_bench,
// conv3x3_bench): one call timed by the wall clock or the calling thread's CPU time, REPETITIONS
// of it after a warm-up as a minimum and a median, and the THREADS list they all take.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

namespace dl::bench {

struct Timing {
  double min = 0.0, median = 0.0;
};

// Microseconds of one call of f. cpu_time: the calling thread's CPU time instead of the wall
// clock; on a busy machine that leaves out the time other processes took the core, so 1-thread
// figures stay comparable (figures of several threads do not: the helpers' time is not counted).
inline double microseconds_of(const std::function<void()>& f, bool cpu_time) {
  if (cpu_time) {
    timespec start{}, end{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    f();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    return (end.tv_sec - start.tv_sec) * 1e6 + (end.tv_nsec - start.tv_nsec) * 1e-3;
  }
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// Whether PROFILE_CPU_TIME asks for CPU time (microseconds_of).
inline bool cpu_time_requested() { return std::getenv("PROFILE_CPU_TIME") != nullptr; }

inline double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0.0 : samples[samples.size() / 2];
}

// `repetitions` calls in a row after one warm-up call (first-touch page faults, the pool's and
// BLAS's threads started): their minimum and median.
inline Timing time_calls(int repetitions, bool cpu_time, const std::function<void()>& call) {
  call();
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) samples.push_back(microseconds_of(call, cpu_time));
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

// "1,4,16" -> {1, 4, 16}; anything else exits with 2, naming the program and the fix.
inline std::vector<int> thread_counts_of(const std::string& list, const char* program) {
  std::vector<int> counts;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    const int count = std::atoi(item.c_str());
    if (count < 1 || std::to_string(count) != item) {
      std::fprintf(stderr,
                   "%s: THREADS '%s': '%s' is not a positive thread count; give e.g. 1,2 or "
                   "1,4,16\n",
                   program, list.c_str(), item.c_str());
      std::exit(2);
    }
    counts.push_back(count);
    begin = end + 1;
  }
  return counts;
}

// The header of a table with two name columns, then a minimum and a median column per thread
// count.
inline void print_min_median_header(const char* first, const char* second,
                                    const std::vector<int>& thread_counts) {
  std::printf("| %s | %s |", first, second);
  for (int threads : thread_counts) std::printf(" %d min us | %d median us |", threads, threads);
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < thread_counts.size(); ++i) std::printf("---|---|");
  std::printf("\n");
}

// The rest of a row of that table, after its two names: `call` timed on each thread count (the
// CPU backend's pool set to it), minimum and median; the 1-thread figures in the calling
// thread's CPU time where cpu_time (microseconds_of).
inline void print_min_median_cells(int repetitions, bool cpu_time,
                                   const std::vector<int>& thread_counts,
                                   const std::function<void()>& call) {
  for (int threads : thread_counts) {
    dl::set_cpu_threads(threads);
    const Timing t = time_calls(repetitions, cpu_time && threads == 1, call);
    std::printf(" %.0f | %.0f |", t.min, t.median);
  }
  std::printf("\n");
}

}  // namespace dl::bench
