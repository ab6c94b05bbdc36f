// Vectors of 8 or 16 lanes (GCC's vector extensions) and their unaligned loads and stores, for the
// CPU kernels written for a lane count rather than an instruction set: the Winograd convolution
// (one tile per lane) and the tiled pooling (one float of a row per lane). 16 lanes are one
// AVX-512 register, 8 one AVX2 register; a narrower build splits them.
#pragma once

#include <cstddef>
#include <utility>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// The widest lane count code of this build's variant may use: 16 floats with AVX-512 (one
// register), else 8 (one AVX2 register; two SSE ones in the x86-64 variant, where 8 lanes serve
// the pooling and the tests). GCC splits a wider vector into several registers, but lowers its
// shuffles and compares to scalar loops and passes it through memory: with 16 lanes in an AVX2
// build, the Winograd forward pass of LeNet's second layer took 29.5 ms instead of 1.3, and the
// tiled pooling made a whole training epoch 24% slower. load_lanes and store_lanes refuse wider
// vectors at compile time.
#if defined(__AVX512F__)
constexpr int kRegisterLanes = 16;
#else
constexpr int kRegisterLanes = 8;
#endif

// GCC drops a vector attribute on a dependent alias, hence one specialization per width.
template <int L>
struct LaneVectors;
template <>
struct LaneVectors<8> {
  using Floats = float __attribute__((vector_size(8 * sizeof(float))));
  using Ints = int __attribute__((vector_size(8 * sizeof(int))));
};
template <>
struct LaneVectors<16> {
  using Floats = float __attribute__((vector_size(16 * sizeof(float))));
  using Ints = int __attribute__((vector_size(16 * sizeof(int))));
};
template <int L>
using Lanes = typename LaneVectors<L>::Floats;
template <int L>
using LaneIndex = typename LaneVectors<L>::Ints;

// A vector from or to memory with any alignment.
template <typename Vector, typename T>
inline Vector load_vector(const T* p) {
  Vector v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <typename T, typename Vector>
inline void store_vector(T* p, Vector v) {
  __builtin_memcpy(p, &v, sizeof v);
}
template <int L>
inline Lanes<L> load_lanes(const float* p) {
  static_assert(L <= kRegisterLanes, "wider than this build's registers: see kRegisterLanes");
  return load_vector<Lanes<L>>(p);
}
template <int L>
inline void store_lanes(float* p, Lanes<L> v) {
  static_assert(L <= kRegisterLanes, "wider than this build's registers: see kRegisterLanes");
  store_vector(p, v);
}

// Holds v in a register from here on: GCC otherwise folds a vector that several multiply-adds
// read into each of them as a memory operand, one load per use, which left the Winograd weight
// products bound by loads at 52 GFLOP/s of a Zen 2 core's 94 (conv2d_winograd_weights.cpp). Only
// where the build has vector registers of 8 floats (a narrower build splits the vector).
template <int L>
[[gnu::always_inline]] inline void keep_in_register(Lanes<L>& v) {
#if defined(__AVX__)
  asm("" : "+v"(v));
#else
  (void)v;
#endif
}

// 0, 1, ..., L - 1.
template <int L, std::size_t... kLane>
constexpr LaneIndex<L> lane_numbers(std::index_sequence<kLane...>) {
  return LaneIndex<L>{static_cast<int>(kLane)...};
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
