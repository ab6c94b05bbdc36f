// The host grid's scheduler: each block's threads are fibers (ucontext) on the calling OS
// thread. A fiber runs until it waits (at __syncthreads or inside a warp shuffle) or ends; when
// every fiber waits, the waits that are complete are released: a warp's shuffle when all its
// lanes are in it, a barrier when every thread of the block that has not ended is at it. Waits
// that can never complete (a barrier some threads skip while others wait in a shuffle, a shuffle
// with lanes that ended or do not exist) are errors, as they hang or are undefined on a GPU.
//
// Under ThreadSanitizer each fiber is a TSan fiber that switches without synchronizing, and the
// barriers and shuffles release and acquire, so a shared-memory access that lacks its
// __syncthreads is reported as a race. Under AddressSanitizer the stack switches are announced.
// Both hooks are weak symbols: without the sanitizer they are null and skipped.
#include "host_grid.hpp"

#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     std::size_t* size_old) __attribute__((weak));
void* __tsan_get_current_fiber() __attribute__((weak));
void* __tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_destroy_fiber(void* fiber) __attribute__((weak));
void __tsan_switch_to_fiber(void* fiber, unsigned flags) __attribute__((weak));
void __tsan_acquire(void* addr) __attribute__((weak));
void __tsan_release(void* addr) __attribute__((weak));
}

namespace dl::emu {

namespace {

constexpr unsigned kLanes = 32;
constexpr unsigned kMaxThreads = 1024;
constexpr unsigned kTsanNoSync = 1;  // __tsan_switch_to_fiber_no_sync
// Kernels keep little on the stack; sanitizers make frames several times larger.
constexpr std::size_t kStackBytes = 256 * 1024;
constexpr std::size_t kGuardBytes = 4096;

enum class Wait { kRunnable, kBarrier, kShuffle, kEnded };

void tsan_release(void* a) {
  if (__tsan_release) __tsan_release(a);
}
void tsan_acquire(void* a) {
  if (__tsan_acquire) __tsan_acquire(a);
}

struct Fiber {
  ucontext_t context{};
  char* stack = nullptr;  // usable part, above the guard page
  void* tsan_fiber = nullptr;
  void* asan_fake_stack = nullptr;
  ThreadPosition position{};
  // Written by the fiber, read by the scheduler: relaxed atomics, so that ThreadSanitizer sees
  // no race in the bookkeeping and no ordering between the threads of the block either.
  std::atomic<Wait> wait{Wait::kEnded};
};

// One per OS thread: the fibers of the block being run.
struct Grid {
  std::vector<std::unique_ptr<Fiber>> fibers;
  unsigned threads = 0;
  ucontext_t scheduler{};
  void* scheduler_tsan = nullptr;
  const void* scheduler_stack_bottom = nullptr;
  std::size_t scheduler_stack_size = 0;
  std::atomic<Fiber*> current{nullptr};
  const std::function<void()>* body = nullptr;
  // Set by a fiber whose kernel threw (failure written first, read by the scheduler once it
  // sees `failed`).
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  // Shuffle exchange, one slot of 8 bytes per thread; addresses TSan synchronizes on.
  std::vector<std::uint64_t> lanes;
  char block_start = 0, block_end = 0, barrier = 0;
  std::vector<char> warp_sync;

  ~Grid() {
    for (auto& f : fibers) {
      if (f->tsan_fiber && __tsan_destroy_fiber) __tsan_destroy_fiber(f->tsan_fiber);
      if (f->stack) munmap(f->stack - kGuardBytes, kStackBytes + kGuardBytes);
    }
  }
};

thread_local Grid grid_state;
thread_local cudaError_t last_error = cudaSuccess;

std::mutex registry_mutex;
std::set<std::string>& defined_names() {
  static std::set<std::string> names;
  return names;
}
struct RunRecord {
  std::set<std::string> names;
  std::set<const void*> instantiations;
  std::size_t launches = 0;
};
RunRecord& run_record() {
  static RunRecord record;
  return record;
}

std::string base_name(const char* name) {
  std::string s(name);
  return s.substr(0, s.find('<'));
}

void fiber_entry();

Fiber& fiber_at(Grid& g, unsigned index) {
  while (g.fibers.size() <= index) {
    auto f = std::make_unique<Fiber>();
    void* memory = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("host grid: cannot map a fiber stack");
    // A stack overflow hits the guard page instead of the next fiber's stack.
    mprotect(memory, kGuardBytes, PROT_NONE);
    f->stack = static_cast<char*>(memory) + kGuardBytes;
    if (__tsan_create_fiber) f->tsan_fiber = __tsan_create_fiber(0);
    g.fibers.push_back(std::move(f));
  }
  return *g.fibers[index];
}

// Scheduler -> fiber.
void resume(Grid& g, Fiber& f) {
  g.current.store(&f, std::memory_order_relaxed);
  void* fake = nullptr;
  if (__sanitizer_start_switch_fiber) __sanitizer_start_switch_fiber(&fake, f.stack, kStackBytes);
  if (__tsan_switch_to_fiber) __tsan_switch_to_fiber(f.tsan_fiber, kTsanNoSync);
  swapcontext(&g.scheduler, &f.context);
  if (__sanitizer_finish_switch_fiber) __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
  g.current.store(nullptr, std::memory_order_relaxed);
}

// Fiber -> scheduler. `ending`: the fiber's stack is not used again until it restarts.
void suspend(Grid& g, Fiber& f, bool ending) {
  if (__sanitizer_start_switch_fiber) {
    __sanitizer_start_switch_fiber(ending ? nullptr : &f.asan_fake_stack, g.scheduler_stack_bottom,
                                   g.scheduler_stack_size);
  }
  if (__tsan_switch_to_fiber) __tsan_switch_to_fiber(g.scheduler_tsan, kTsanNoSync);
  swapcontext(&f.context, &g.scheduler);
  if (__sanitizer_finish_switch_fiber) {
    __sanitizer_finish_switch_fiber(f.asan_fake_stack, &g.scheduler_stack_bottom,
                                    &g.scheduler_stack_size);
  }
}

Fiber& current_fiber() {
  Fiber* f = grid_state.current.load(std::memory_order_relaxed);
  if (!f) throw std::logic_error("host grid: a device built-in was used outside a kernel");
  return *f;
}

void fiber_entry() {
  Grid& g = grid_state;
  Fiber& f = current_fiber();
  if (__sanitizer_finish_switch_fiber) {
    __sanitizer_finish_switch_fiber(nullptr, &g.scheduler_stack_bottom, &g.scheduler_stack_size);
  }
  tsan_acquire(&g.block_start);
  try {
    (*g.body)();
  } catch (...) {
    if (!g.failed.load(std::memory_order_relaxed)) {
      g.failure = std::current_exception();
      g.failed.store(true, std::memory_order_relaxed);
    }
  }
  tsan_release(&g.block_end);
  f.wait.store(Wait::kEnded, std::memory_order_relaxed);
  suspend(g, f, true);
}

void wait_here(Wait kind) {
  Grid& g = grid_state;
  Fiber& f = current_fiber();
  // The scheduler acquires this when the block ends however it ends (an error leaves fibers
  // suspended here), so that its later writes to what they read are ordered after them.
  tsan_release(&g.block_end);
  f.wait.store(kind, std::memory_order_relaxed);
  suspend(g, f, false);
}

[[noreturn]] void fail(const char* name, dim3 block, const std::string& what) {
  throw std::runtime_error(std::string("host grid: kernel ") + name + ", block " +
                           std::to_string(block.x) + ": " + what);
}

// Releases the waits that are complete; false when none is (every unfinished thread waits).
bool release_waits(Grid& g, const char* name, dim3 block) {
  bool released = false;
  bool any_barrier = false, all_barrier = true, all_ended = true;
  for (unsigned w = 0; w * kLanes < g.threads; ++w) {
    const unsigned first = w * kLanes, last = std::min(first + kLanes, g.threads);
    unsigned shuffling = 0, ended = 0;
    for (unsigned t = first; t < last; ++t) {
      const Wait s = g.fibers[t]->wait.load(std::memory_order_relaxed);
      shuffling += s == Wait::kShuffle;
      ended += s == Wait::kEnded;
      any_barrier |= s == Wait::kBarrier;
      all_barrier &= s == Wait::kBarrier || s == Wait::kEnded;
      all_ended &= s == Wait::kEnded;
    }
    if (shuffling == last - first) {
      for (unsigned t = first; t < last; ++t) g.fibers[t]->wait = Wait::kRunnable;
      released = true;
    } else if (shuffling > 0 && ended > 0) {
      fail(name, block, "a warp shuffle waits for lanes that have returned");
    }
  }
  if (released || all_ended) return released;
  if (any_barrier && all_barrier) {
    for (unsigned t = 0; t < g.threads; ++t) {
      if (g.fibers[t]->wait == Wait::kBarrier) g.fibers[t]->wait = Wait::kRunnable;
    }
    return true;
  }
  fail(name, block, "deadlock: some threads wait at __syncthreads, others in a warp shuffle");
}

void run_block(Grid& g, const char* name, dim3 block, dim3 block_dim, dim3 grid_dim) {
  g.threads = block_dim.x * block_dim.y * block_dim.z;
  for (unsigned t = 0; t < g.threads; ++t) {
    Fiber& f = fiber_at(g, t);
    f.position = {
        dim3(t % block_dim.x, t / block_dim.x % block_dim.y, t / (block_dim.x * block_dim.y)),
        block, block_dim, grid_dim};
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_entry, 0);
    f.wait.store(Wait::kRunnable, std::memory_order_relaxed);
  }
  // Blocks are ordered for ThreadSanitizer (each starts after the previous one ended), because
  // the static that stands for shared memory is the same for every block.
  tsan_release(&g.block_start);
  struct BlockEnd {
    Grid& g;
    ~BlockEnd() { tsan_acquire(&g.block_end); }
  } block_end{g};
  for (;;) {
    for (unsigned t = 0; t < g.threads; ++t) {
      Fiber& f = *g.fibers[t];
      while (f.wait.load(std::memory_order_relaxed) == Wait::kRunnable) resume(g, f);
      if (g.failed.load(std::memory_order_relaxed)) {
        tsan_acquire(&g.block_end);  // the failing fiber released it after writing g.failure
        g.failed.store(false, std::memory_order_relaxed);
        std::rethrow_exception(std::exchange(g.failure, nullptr));
      }
    }
    if (!release_waits(g, name, block)) break;
  }
}

}  // namespace

const ThreadPosition& position() {
  return current_fiber().position;
}

void sync_block() {
  Grid& g = grid_state;
  tsan_release(&g.barrier);
  wait_here(Wait::kBarrier);
  tsan_acquire(&g.barrier);
}

void shuffle_down(unsigned mask, void* value, std::size_t bytes, unsigned delta) {
  Grid& g = grid_state;
  Fiber& f = current_fiber();
  const ThreadPosition& p = f.position;
  const unsigned t = p.thread.x + p.block_dim.x * (p.thread.y + p.block_dim.y * p.thread.z);
  const unsigned lane = t % kLanes, warp_first = t - lane;
  if (mask != 0xffffffffu)
    throw std::logic_error("host grid: only full-warp shuffles are emulated");
  if (warp_first + kLanes > g.threads) {
    throw std::logic_error("host grid: a full-warp shuffle in a block of " +
                           std::to_string(g.threads) + " threads (not whole warps)");
  }
  void* sync = &g.warp_sync[t / kLanes];
  std::memcpy(&g.lanes[t], value, bytes);
  tsan_release(sync);
  wait_here(Wait::kShuffle);
  tsan_acquire(sync);
  if (lane + delta < kLanes) std::memcpy(value, &g.lanes[t + delta], bytes);
  // Nobody writes a slot again before every lane has read.
  tsan_release(sync);
  wait_here(Wait::kShuffle);
  tsan_acquire(sync);
}

void run_grid(const char* name, const void* kernel, dim3 grid, dim3 block,
              const std::function<void()>& body) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      block.z > 64) {
    last_error = cudaErrorInvalidConfiguration;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    RunRecord& r = run_record();
    r.names.insert(base_name(name));
    r.instantiations.insert(kernel);
    ++r.launches;
  }
  Grid& g = grid_state;
  if (__tsan_get_current_fiber && !g.scheduler_tsan) g.scheduler_tsan = __tsan_get_current_fiber();
  g.body = &body;
  // Sized here, before any fiber runs, so no fiber reallocates what another one reads.
  g.lanes.resize(kMaxThreads);
  g.warp_sync.resize(kMaxThreads / kLanes);
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) run_block(g, name, dim3(x, y, z), block, grid);
    }
  }
  g.body = nullptr;
}

bool register_kernels(const char* file, std::initializer_list<const char*> names) {
  (void)file;
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (const char* n : names) defined_names().insert(n);
  return true;
}

std::vector<std::string> kernels_defined() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return {defined_names().begin(), defined_names().end()};
}

std::vector<std::string> kernels_run() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return {run_record().names.begin(), run_record().names.end()};
}

std::size_t instantiations_run() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return run_record().instantiations.size();
}

std::size_t launches_run() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return run_record().launches;
}

}  // namespace dl::emu

// ---- runtime API -------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
  return std::exchange(dl::emu::last_error, cudaSuccess);
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaErrorInvalidConfiguration ? "invalid configuration argument"
                                                : cudaGetErrorName(error);
}
