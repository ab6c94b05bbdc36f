// The on-device sum of the GPU collective (device_group_sum.cu): the buffers of the workers that
// share one GPU, added on the leader's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "launch_limits.hpp"

namespace dl::gpu {

// dst[i] = ((sources[0][i] + sources[1][i]) + sources[2][i]) + ..., float additions in exactly
// this order, so every device that sums the same values gets the same bits. `dst` may be
// sources[0] (the leader accumulates into its own buffer); no other source may overlap dst. Queued on `stream`; the caller orders it after the writes of every source.
void launch_sum_in_order(float* dst, const std::vector<const float*>& sources, std::size_t n,
                         const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
