// CPU implementation of the Backend's dropout ops (see backend/backend.hpp for the contract).
//
// The keep decision of element i is a pure function of (seed, counter, i). Every backend must
// compute it exactly like this (all arithmetic on uint64_t, wrapping; splitmix64 from
// core/random.hpp):
//
//   key  = mix(seed, counter + kDropoutCounterTag) = splitmix64(seed ^ splitmix64(counter + tag))
//   bits = splitmix64(key + i)
//   u    = float(bits >> 40) * 2^-24            (24 random bits: exact in float, in [0, 1))
//   keep = u < retain                           (float comparison, retain as given)
//   mask[i] = keep ? 1.0f / retain : 0.0f       (one float division, IEEE round to nearest)
//   y[i] = x[i] * mask[i]
//
// The tag separates dropout's streams from other users of the same seed. retain must lie in
// (0, 1]; retain == 1 keeps everything with mask 1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

#include "backend/cpu/isa_namespace.hpp"
#include "backend/ops/dropout.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// The keep decision is the op contract's (backend/ops/dropout.hpp).
using ops::kDropoutCounterTag;

// u(seed, counter, i) of the formula above, for element i; exposed so tests and other backends'
// tests can check masks against it.
float dropout_uniform(std::uint64_t seed, std::uint64_t counter, std::uint64_t i);

void dropout_forward(std::size_t n, float retain, std::uint64_t seed, std::uint64_t counter,
                     const float* x, float* y, float* mask);
void dropout_backward(std::size_t n, const float* mask, const float* dy, float* dx);

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
