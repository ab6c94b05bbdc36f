// Spreads the CPU backend's own loops over the threads the trainer gave one worker. Each op cuts
// its work into tasks whose boundaries depend on the problem's size alone (so many samples, so
// many columns, so many floats), never on the thread count; tasks write disjoint memory, and where
// tasks make partial sums (a convolution's weight gradient) they are added in task order. Results
// are therefore bit-identical on any number of threads, and a machine with more cores gets more
// tasks running at once, up to the task count. Work whose every item is computed alone, by the
// same code whatever else its task holds (elementwise passes, pooling planes, gathered samples),
// may be cut by the thread count too (items_per_task): no bit depends on where its tasks end.
// Not so a product over a task's items: a library may round a wider product differently (the
// columns path's forward samples, with CBLAS). Products inside a task run on its thread alone
// (gemm.hpp), so the library's threads and ours never multiply.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace dl::cpu {

// Tasks of at most `per_task` items that cover `count` items (at least one task).
inline int task_count(int count, int per_task) {
  return count <= per_task ? 1 : (count + per_task - 1) / per_task;
}

// Items [begin, end) of slice i when `count` items are cut into `slices` nearly equal parts.
struct SliceRange {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};
inline SliceRange slice_range(int count, int slices, int i) {
  return {count * i / slices, count * (i + 1) / slices};
}

// Threads parallel_slices uses: what set_cpu_threads (cpu_backend.hpp) last set, at least 1.
int parallel_width();

// How a refused start names a pool's helper: "compute thread 2 of 4 (parallel.blasThreads)",
// `number` counting the calling thread as the first.
std::string compute_thread_name(int number, int width);

// Floats in a cache line. Parts of a scratch buffer or workspace that start on a whole line keep
// SIMD stores from splitting lines.
constexpr std::size_t kLineFloats = 16;
// n floats rounded up to whole lines.
inline std::size_t round_up_to_lines(std::size_t n) {
  return (n + kLineFloats - 1) / kLineFloats * kLineFloats;
}

// A buffer of at least `floats` floats, 64-byte aligned, owned by the calling thread and reused
// by its next call (a task's scratch: im2col columns). Its contents are not kept between tasks.
float* thread_scratch(std::size_t floats);

// Calls slice(0), ..., slice(count - 1), each exactly once, spread over parallel_width()
// threads (the caller is one of them), and returns when all have returned. Every calling thread
// (each worker) has its own helpers; a call made from inside a slice runs its slices in order.
void parallel_slices(int count, const std::function<void(int)>& slice);

// Items per task for work whose items are each computed by one task alone: `preferred` where
// that gives every thread kTasksPerThread tasks or more, else fewer, down to `least`, so that
// the threads of a many-core machine all get some (ResNet-20's 8x8 stage made 16 elementwise
// ranges, and 8 pooling and gathering tasks, for 64 threads). One thread takes `preferred`.
constexpr int kTasksPerThread = 2;
std::size_t items_per_task(std::size_t items, std::size_t preferred, std::size_t least);

// Calls part(begin, end) on consecutive ranges that cover [0, n) once, through parallel_slices:
// ranges of items_per_task(n, preferred, least) items, rounded up to a multiple of `granule`
// (kLineFloats for floats, so that no two tasks write one cache line), the last one shorter. For
// work whose items are each computed alone (above).
void parallel_item_ranges(std::size_t n, std::size_t preferred, std::size_t least,
                          std::size_t granule,
                          const std::function<void(std::size_t begin, std::size_t end)>& part);

// For passes over n floats whose split must not depend on the thread count (sums of ranges):
// calls part(begin, end) on consecutive ranges of kRangeFloats (the last one shorter) that cover
// [0, n) once, through parallel_slices. Below kMinSlicedElements (a bias, a small layer's
// weights) it makes one call part(0, n) on the calling thread, since waking the pool would cost
// more than the pass.
constexpr std::size_t kMinSlicedElements = std::size_t{1} << 15;
constexpr std::size_t kRangeFloats = std::size_t{1} << 15;
void parallel_ranges(std::size_t n,
                     const std::function<void(std::size_t begin, std::size_t end)>& part);

// The same for elementwise passes (each float computed alone): ranges of kRangeFloats, or
// shorter ones (whole cache lines, at least kLeastElementwiseFloats) where the threads would
// otherwise sit idle (items_per_task).
constexpr std::size_t kLeastElementwiseFloats = std::size_t{1} << 13;
void parallel_elementwise(std::size_t n,
                          const std::function<void(std::size_t begin, std::size_t end)>& part);

}  // namespace dl::cpu
