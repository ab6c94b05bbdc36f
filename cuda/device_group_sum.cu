// The device group's sum: one pass per batch of source buffers, each element added in source
// order. A batch's pointers travel by value in the kernel's parameters, so no device-side pointer
// table has to be allocated or uploaded during a step.
#include <algorithm>

#include "cuda_check.hpp"
#include "device_group_sum.hpp"

namespace dl::gpu {

namespace {

// Sources per launch: more workers per GPU than this are summed in several passes, each
// continuing from the running sum in dst, which keeps the order of additions unchanged.
constexpr int kSourcesPerLaunch = 8;

struct SourceBatch {
  const float* buffers[kSourcesPerLaunch];
  int count;
};

// continue_sum = false: dst = b0 + b1 + ...; true: dst = dst + b0 + b1 + ... (left to right).
__global__ void sum_in_order_kernel(float* dst, SourceBatch batch, bool continue_sum,
                                    std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int next = 0;
    float sum = continue_sum ? dst[i] : batch.buffers[next++][i];
    for (; next < batch.count; ++next) sum += batch.buffers[next][i];
    dst[i] = sum;
  }
}

}  // namespace

void launch_sum_in_order(float* dst, const std::vector<const float*>& sources, std::size_t n,
                         const LaunchLimits& limits, cudaStream_t stream) {
  if (n == 0 || sources.empty()) return;
  const int block = limits.block();
  const int grid = limits.grid(n, block);
  std::size_t first = 0;
  while (first < sources.size()) {
    SourceBatch batch{};
    batch.count =
        static_cast<int>(std::min<std::size_t>(kSourcesPerLaunch, sources.size() - first));
    for (int s = 0; s < batch.count; ++s) batch.buffers[s] = sources[first + s];
    // Only the first batch starts from sources[0]; later ones add to the running sum in dst.
    sum_in_order_kernel<<<grid, block, 0, stream>>>(dst, batch, first > 0, n);
    DL_CUDA_LAUNCHED(sum_in_order_kernel);
    first += static_cast<std::size_t>(batch.count);
  }
}

}  // namespace dl::gpu
