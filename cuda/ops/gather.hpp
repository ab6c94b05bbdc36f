// Launcher for gather_samples (gather.cu): a batch built from a data set held on the device,
// byte for byte the conversion of backend/cpu/gather.hpp, so the batch equals the host's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "launch_limits.hpp"

namespace dl::gpu {

void launch_gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                           std::size_t sample_bytes, const std::int32_t* indices, int n,
                           float* images, std::int32_t* batch_labels, const LaunchLimits& limits,
                           cudaStream_t stream);

}  // namespace dl::gpu
