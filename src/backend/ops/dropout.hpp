// Inverted dropout's keep decision, shared by both backends (see README.md in this folder), so
// that masks agree bit for bit: element i of a call is kept when dropout_uniform_from_key(
// dropout_key(seed, counter), i) < retain, and a kept value is scaled by 1/retain. The
// arithmetic is integer hashing, an exact conversion of 24 bits to float and a multiplication by
// a power of two, none of which can round differently on another device.
#pragma once

#include <cstdint>

#include "core/random.hpp"

namespace dl::ops {

// Keeps dropout's keys apart from the other users of the same (seed, counter) streams.
inline constexpr std::uint64_t kDropoutCounterTag = 0xD1B54A32D192ED03ull;

constexpr std::uint64_t dropout_key(std::uint64_t seed, std::uint64_t counter) {
  return mix(seed, counter + kDropoutCounterTag);
}

// Uniform in [0, 1) on a grid of 2^-24.
constexpr float dropout_uniform_from_key(std::uint64_t key, std::uint64_t i) {
  constexpr int kDiscardedBits = 40;                   // 64 - 24 bits kept
  constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;  // 2^-24
  return static_cast<float>(splitmix64(key + i) >> kDiscardedBits) * kTwoToMinus24;
}

constexpr float dropout_kept_scale(float retain) {
  return 1.0f / retain;
}

}  // namespace dl::ops
