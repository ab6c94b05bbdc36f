// Spreads the CPU backend's own loops over the cores the trainer gave one worker. With one worker
// and N BLAS threads, the ops that are not one large GEMM (im2col, col2im, pooling, the small
// GEMMs of a convolution) would otherwise run on one core while the others idle. Each op cuts
// its work into a fixed number of slices, independent of the thread count, and slices write
// disjoint memory, so results are identical for any thread count.
#pragma once

#include <cstddef>
#include <functional>

namespace dl::cpu {

// Into how many slices the CPU ops cut their work: the cores of this project's 2-core machine.
// Fixed, whatever the thread count, so every sum is taken in the same order on any number of
// threads and results never depend on it.
inline constexpr int kWorkSlices = 2;

// Items [begin, end) of slice i when `count` items are cut into `slices` nearly equal parts.
struct SliceRange {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};
inline SliceRange slice_range(int count, int slices, int i) {
  return {count * i / slices, count * (i + 1) / slices};
}

// Threads parallel_slices would use now: the BLAS thread count the trainer set (1 for the
// reference BLAS), or 1 while another call holds the pool.
int parallel_width();

// Calls slice(0), ..., slice(count - 1), each exactly once, spread over parallel_width()
// threads (the caller is one of them), and returns when all have returned. While slices run on
// several threads, OpenBLAS is set to one thread, so a GEMM inside a slice stays on its core;
// the previous setting is restored afterwards. A call made while the pool is busy (another
// worker's op) runs its slices in order on the calling thread.
void parallel_slices(int count, const std::function<void(int)>& slice);

// For elementwise passes over n floats: calls part(begin, end) on consecutive ranges that cover
// [0, n) once, through parallel_slices. Below kMinSlicedElements (a bias, a small layer's
// weights) it makes one call part(0, n) on the calling thread, since waking the pool would cost
// more than the pass. The ranges depend on n alone and start on 64-byte boundaries.
constexpr std::size_t kMinSlicedElements = std::size_t{1} << 15;
void parallel_ranges(std::size_t n,
                     const std::function<void(std::size_t begin, std::size_t end)>& part);

}  // namespace dl::cpu
