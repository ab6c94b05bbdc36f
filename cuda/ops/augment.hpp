// Launcher for gather_transformed (augment.cu): a batch gathered from a data set held on the
// device, cropped, flipped and normalized by the op contract (backend/ops/augment.hpp), so the
// batch equals the host loader's bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/ops/augment.hpp"
#include "launch_limits.hpp"

namespace dl::gpu {

void launch_gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                               const ops::SampleTransform& t, const std::int32_t* indices, int n,
                               const float* channel_mean, const float* channel_std, float* images,
                               std::int32_t* batch_labels, const LaunchLimits& limits,
                               cudaStream_t stream);

}  // namespace dl::gpu
