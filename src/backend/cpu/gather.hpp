// CPU implementation of the Backend's gather_samples and gather_transformed (see
// backend/backend.hpp for the contract): a batch built from a data set already in backend memory,
// byte b becoming b / kLargestPixel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/isa_namespace.hpp"
#include "backend/ops/augment.hpp"
#include "backend/ops/gather.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// The divisor of the pixel conversion (the op contract's, backend/ops/gather.hpp): float(b) /
// kLargestPixel is the one IEEE division Dataset::gather performs, so every backend's batch
// matches the host's.
using ops::kLargestPixel;

void gather_samples(const std::uint8_t* pixels, const std::int32_t* labels,
                    std::size_t sample_bytes, const std::int32_t* indices, int n, float* images,
                    std::int32_t* batch_labels);

// gather_transformed: each sample through the op contract's host transform
// (backend/ops/augment.hpp), the very code of the host loader.
void gather_transformed(const std::uint8_t* pixels, const std::int32_t* labels,
                        const ops::SampleTransform& t, const std::int32_t* indices, int n,
                        const float* channel_mean, const float* channel_std, float* images,
                        std::int32_t* batch_labels);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
