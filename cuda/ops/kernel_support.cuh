// Device-side helpers shared by the kernels: grid-stride indexing and block reductions.
//
// The block reductions are deterministic: warp shuffles in a fixed tree, then every thread adds
// the warp totals in warp order. With the same grid and block (which depend only on the sizes
// and Config::cuda), a sum is bit-identical from run to run, unlike atomicAdd.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dl::gpu {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;
inline constexpr int kWarpLanes = 32;

__device__ inline std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

// Index math in 32 bits where the loop's range allows it. Kernels that split a flat index into
// (plane, row, column) divide per element; 64-bit division and remainder are software routines
// on NVIDIA GPUs, several times the cost of the 32-bit ones. Up to this bound, i + grid_stride()
// cannot wrap a 32-bit unsigned, because launches never ask for more threads than the loop has
// items plus one block (LaunchLimits::grid).
inline constexpr std::size_t kMax32BitLoop = std::size_t{1} << 30;

// f(std::uint32_t{}) when a grid-stride loop over n items may index in 32 bits, else
// f(std::size_t{}): the launcher instantiates its kernel for the index type given.
template <typename F>
void with_index_type(std::size_t n, F&& f) {
  if (n <= kMax32BitLoop) {
    f(std::uint32_t{});
  } else {
    f(std::size_t{});
  }
}

// Warps as workers: warp w of the grid takes items w, w + warp_stride(), ... blockDim.x must be a
// whole number of warps, so a warp's lanes take the same items.
__device__ inline int first_warp() {
  return static_cast<int>(first_index() / kWarpLanes);
}
__device__ inline int warp_stride() {
  return static_cast<int>(grid_stride() / kWarpLanes);
}

// Sum of v over the warp, in lane 0 (the other lanes get partial sums): a fixed tree, lane l adds
// lane l + 16, then l + 8, l + 4, l + 2, l + 1. All 32 lanes must call it.
template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = kWarpLanes / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(kFullWarpMask, v, offset);
  return v;
}

// Sum of v over the block, returned to every thread. blockDim.x must be a whole number of warps
// (LaunchLimits::reduction_block, row_block). `shared` holds kWarpLanes values and is used only
// by these reductions; the leading barrier lets consecutive calls share it.
template <typename T>
__device__ T block_sum(T v, T* shared) {
  v = warp_sum(v);
  __syncthreads();
  if (threadIdx.x % kWarpLanes == 0) shared[threadIdx.x / kWarpLanes] = v;
  __syncthreads();
  T total = shared[0];
  for (unsigned w = 1; w < blockDim.x / kWarpLanes; ++w) total += shared[w];
  return total;
}

// Maximum of v over the block, returned to every thread; same rules as block_sum.
__device__ inline float block_max(float v, float* shared) {
  for (int offset = kWarpLanes / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_down_sync(kFullWarpMask, v, offset));
  __syncthreads();
  if (threadIdx.x % kWarpLanes == 0) shared[threadIdx.x / kWarpLanes] = v;
  __syncthreads();
  float best = shared[0];
  for (unsigned w = 1; w < blockDim.x / kWarpLanes; ++w) best = fmaxf(best, shared[w]);
  return best;
}

}  // namespace dl::gpu
