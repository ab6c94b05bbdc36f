// Counter-based random numbers. A stream is (seed, stream id, counter): the state to save for an
// exact resume is one 64-bit counter, and every worker or layer gets an independent stream by id.
// Distributions are computed here (not with <random>'s distributions, whose output differs
// between standard libraries) so runs are reproducible across machines.
#pragma once

#include <cmath>
#include <cstdint>

namespace dl {

// The one mixer of dl-train's counter-based streams (CPU and GPU: constexpr, so device code calls
// it too).
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// `value` mixed into `key`: the key of stream `value` of `key`, or the random bits of counter
// `value` of a stream keyed `key`. Streams and counters are independent of each other.
constexpr std::uint64_t mix(std::uint64_t key, std::uint64_t value) {
  return splitmix64(key ^ splitmix64(value));
}

class RandomStream {
 public:
  // constexpr, like the draws below, so that device code (the input pipeline's crop and flip
  // draws, backend/ops/augment.hpp) draws exactly what the host draws.
  constexpr RandomStream(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter = 0)
      : key_(mix(seed, stream + kStreamTag)), counter_(counter) {}

  constexpr std::uint64_t next_u64() { return mix(key_, counter_++); }
  // Uniform in [0, 1) with 24 random bits (exactly representable as float).
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  double uniform_double() {
    return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0);
  }
  // Uniform integer in [0, n) (n > 0), unbiased by rejection.
  constexpr std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t r = 0;
    do {
      r = next_u64();
    } while (r >= limit);
    return r % n;
  }
  // Standard normal by Box-Muller (one value per call; keeps the state a plain counter).
  double normal() {
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    double u1 = uniform_double();
    const double u2 = uniform_double();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  }

  std::uint64_t counter() const { return counter_; }
  void set_counter(std::uint64_t c) { counter_ = c; }

 private:
  // Separates these streams from other users of the same seed (dropout masks).
  static constexpr std::uint64_t kStreamTag = 0x632BE59BD9B4E019ull;
  std::uint64_t key_;
  std::uint64_t counter_;
};

}  // namespace dl
