#include "backend/cpu/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/task_trace.hpp"
#include "core/thread_start.hpp"

// Each thread that calls parallel_slices (each worker) has its own pool of helper threads, started
// on first use and grown to the widest call seen, so several workers' ops run side by side, each
// on its own threads. A call publishes its slices, opens, and bumps a generation number that wakes
// the helpers; every participant (the caller included) takes slice indices from one atomic counter
// until none are left. A helper joins a call only while it is open, and counts itself active while
// it looks; the caller closes the call once every slice has finished and then waits for the
// active helpers alone, so no helper still touches a call's state when the next call resets it,
// and a helper that was asleep or descheduled for the whole call costs the caller nothing.
// Helpers poll for a while before sleeping: a training step issues calls back to back with short
// serial work between them (a small layer, the loss, the next batch), and a futex wake-up costs
// tens of microseconds, which the helper would otherwise miss of every op that follows a gap.
// They yield between polls, so that with more threads than free cores the polling costs the
// threads that have work nothing.

namespace dl::cpu {

namespace {

// thread_scratch's alignment: one cache line.
constexpr std::size_t kScratchAlignment = 64;

// The threads set_cpu_threads asked for.
std::atomic<int> g_threads{1};

// How long a helper polls for the next call before it sleeps: longer than the serial gaps of a
// training step (the output layer and loss, the batch upload, a score report), so the helper sleeps
// between epochs and not between ops. A count of polls would depend on the processor's speed.
constexpr std::chrono::microseconds kSpinTime{200};
// Polls between two reads of the clock. Each poll ends in a yield, so a polling helper gives its
// core to any thread that has work there (more threads than cores, other processes) instead of
// holding it for the whole kSpinTime, and costs nothing more than the system call otherwise.
constexpr unsigned kPollsPerClockRead = 16;

// True on a pool's helpers, and on a caller while its pool runs: a parallel_slices call from
// inside a task runs in order instead of starting a pool of its own.
thread_local bool t_in_pool = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }

  void run(int width, int count, const std::function<void(int)>& slice) {
    while (static_cast<int>(helpers_.size()) < width - 1) {
      // The helper's first generation to wait past is the current one, read here: read in the
      // new thread, it might already be this call's, which the helper would then miss.
      const unsigned current = generation_.load(std::memory_order_acquire);
      helpers_.push_back(
          start_thread(compute_thread_name(static_cast<int>(helpers_.size()) + 2, width),
                       [this, current] { help(current); }));
    }
    task_ = &slice;
    count_ = count;
    failed_.store(false, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    open_.store(true, std::memory_order_seq_cst);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work();
    while (finished_.load(std::memory_order_acquire) < count) std::this_thread::yield();
    // A helper that counted itself active before this store saw the call open and may be in
    // work(); one that counts itself later sees it closed and touches nothing (both sides are
    // sequentially consistent, so one of them sees the other's write).
    open_.store(false, std::memory_order_seq_cst);
    while (active_.load(std::memory_order_seq_cst) > 0) std::this_thread::yield();
    task_ = nullptr;
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      error = std::exchange(error_, nullptr);
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  // Counts its finished slices once at the end: one contended write per participant and call,
  // not one per slice, which matters when a call has a hundred small slices.
  void work() {
    int done = 0;
    for (int i = next_.fetch_add(1, std::memory_order_acq_rel); i < count_;
         i = next_.fetch_add(1, std::memory_order_acq_rel)) {
      if (!failed_.load(std::memory_order_relaxed)) run_slice(i);
      ++done;
    }
    if (done > 0) finished_.fetch_add(done, std::memory_order_acq_rel);
  }

  // A slice that throws (memory a library or thread_scratch could not allocate) fails the call:
  // the slices not yet begun are skipped, and run() rethrows the first exception on the caller's
  // thread once every participant has left the call. Thrown on a helper, it would have ended the
  // process (std::terminate); on the caller, it would have left run() while helpers still ran
  // the call's slices.
  void run_slice(int i) {
    try {
      (*task_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }

  void help(unsigned seen) {
    t_in_pool = true;
    for (;;) {
      if (!spin_while_unchanged(seen)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(
            lock, [&] { return stopping_ || generation_.load(std::memory_order_acquire) != seen; });
        if (stopping_) return;
      }
      seen = generation_.load(std::memory_order_acquire);
      active_.fetch_add(1, std::memory_order_seq_cst);
      if (open_.load(std::memory_order_seq_cst)) work();
      active_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Polls the generation number for kSpinTime; true when it moved past `seen` meanwhile.
  bool spin_while_unchanged(unsigned seen) const {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (unsigned polls = 1;; ++polls) {
      if (generation_.load(std::memory_order_acquire) != seen) return true;
      std::this_thread::yield();
      if (polls % kPollsPerClockRead == 0 && std::chrono::steady_clock::now() > deadline)
        return false;
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
  std::atomic<unsigned> generation_{0};
  const std::function<void(int)>* task_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
  std::atomic<int> finished_{0};
  std::atomic<bool> open_{false};    // between publishing a call's slices and their last finishing
  std::atomic<int> active_{0};       // helpers that may be looking at the current call
  std::atomic<bool> failed_{false};  // a slice of the current call threw
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first exception a slice of the current call threw
};

Pool& pool() {
  thread_local Pool p;
  return p;
}

// t_in_pool while it lives, also when a task throws.
struct InPoolScope {
  InPoolScope() { t_in_pool = true; }
  ~InPoolScope() { t_in_pool = false; }
  InPoolScope(const InPoolScope&) = delete;
  InPoolScope& operator=(const InPoolScope&) = delete;
};

void run_in_order(int count, const std::function<void(int)>& slice) {
  for (int i = 0; i < count; ++i) slice(i);
}

// The trace's own time on this thread so far (the durations' buffer, recording each call's
// line: 5.5 us a call on average in a ResNet-20 run), left out of the times it records, or the
// gap before every next call, which bench/task_scaling.py counts as serial work, would hold it.
thread_local std::int64_t t_trace_cost_ns = 0;

// The traced run: the tasks in order on this thread, each timed (task_trace.hpp).
void run_traced(TaskTrace& trace, int count, const std::function<void(int)>& slice,
                const void* site) {
  const std::int64_t entered = TaskTrace::now_ns();
  std::vector<std::int64_t> task_ns(static_cast<std::size_t>(count));
  const std::int64_t start = TaskTrace::now_ns();
  t_trace_cost_ns += start - entered;
  {
    const InPoolScope in_pool;  // a call from inside a task is part of that task's time
    for (int i = 0; i < count; ++i) {
      const std::int64_t begin = TaskTrace::now_ns();
      slice(i);
      task_ns[static_cast<std::size_t>(i)] = TaskTrace::now_ns() - begin;
    }
  }
  const std::int64_t end = TaskTrace::now_ns();
  trace.record(site, start - t_trace_cost_ns, end - t_trace_cost_ns, task_ns);
  t_trace_cost_ns += TaskTrace::now_ns() - end;
}

// parallel_slices for the op at `site`, the code that called the public function.
void run_slices(int count, const std::function<void(int)>& slice, const void* site) {
  if (TaskTrace* trace = TaskTrace::active(); trace != nullptr && !t_in_pool)
    return run_traced(*trace, count, slice, site);
  const int width = std::min(parallel_width(), count);
  if (width <= 1 || t_in_pool) return run_in_order(count, slice);
  const InPoolScope in_pool;
  pool().run(width, count, slice);
}

}  // namespace

int parallel_width() {
  return std::max(g_threads.load(std::memory_order_relaxed), 1);
}

float* thread_scratch(std::size_t floats) {
  struct Scratch {
    float* data = nullptr;
    std::size_t floats = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (scratch.floats < floats) {
    std::free(scratch.data);
    const std::size_t bytes =
        (floats * sizeof(float) + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
    scratch.data = static_cast<float*>(std::aligned_alloc(kScratchAlignment, bytes));
    if (scratch.data == nullptr) throw std::bad_alloc();
    scratch.floats = floats;
  }
  return scratch.data;
}

std::string compute_thread_name(int number, int width) {
  return fmt::format("compute thread {} of {} (parallel.blasThreads)", number, width);
}

// Not inlined, so that the return address is the op's code (the task trace's site).
__attribute__((noinline)) void parallel_slices(int count, const std::function<void(int)>& slice) {
  run_slices(count, slice, __builtin_return_address(0));
}

namespace {

void run_ranges(std::size_t n, std::size_t range,
                const std::function<void(std::size_t begin, std::size_t end)>& part,
                const void* site) {
  const int ranges = static_cast<int>((n + range - 1) / range);
  run_slices(
      ranges,
      [&](int i) {
        const std::size_t begin = static_cast<std::size_t>(i) * range;
        part(begin, std::min(n, begin + range));
      },
      site);
}

// items_per_task's size rounded up to a multiple of `granule`.
std::size_t range_of(std::size_t n, std::size_t preferred, std::size_t least, std::size_t granule) {
  const std::size_t items = items_per_task(n, preferred, least);
  return (items + granule - 1) / granule * granule;
}

}  // namespace

std::size_t items_per_task(std::size_t items, std::size_t preferred, std::size_t least) {
  if (parallel_width() == 1) return std::max<std::size_t>(preferred, 1);
  const std::size_t tasks = static_cast<std::size_t>(parallel_width()) * kTasksPerThread;
  const std::size_t even = (items + tasks - 1) / tasks;
  return std::max<std::size_t>(std::clamp(even, std::min(least, preferred), preferred), 1);
}

__attribute__((noinline)) void parallel_ranges(
    std::size_t n, const std::function<void(std::size_t begin, std::size_t end)>& part) {
  if (n < kMinSlicedElements) return part(0, n);
  run_ranges(n, kRangeFloats, part, __builtin_return_address(0));
}

__attribute__((noinline)) void parallel_item_ranges(
    std::size_t n, std::size_t preferred, std::size_t least, std::size_t granule,
    const std::function<void(std::size_t begin, std::size_t end)>& part) {
  run_ranges(n, range_of(n, preferred, least, granule), part, __builtin_return_address(0));
}

__attribute__((noinline)) void parallel_elementwise(
    std::size_t n, const std::function<void(std::size_t begin, std::size_t end)>& part) {
  if (n < kMinSlicedElements) return part(0, n);
  run_ranges(n, range_of(n, kRangeFloats, kLeastElementwiseFloats, kLineFloats), part,
             __builtin_return_address(0));
}

}  // namespace dl::cpu

namespace dl {

// OpenBLAS stays on one thread: its threaded products split some shapes differently with the
// thread count (a small product on 4 threads gave other bits than on 1), and the ops' own tasks
// already use every thread.
void set_cpu_threads(int threads) {
  cpu::g_threads.store(std::max(threads, 1), std::memory_order_relaxed);
  set_blas_threads(1);
}

int cpu_threads() {
  return cpu::parallel_width();
}

}  // namespace dl
