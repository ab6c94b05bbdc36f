// The direct convolution's register-blocked loops (conv2d_direct.cpp says what they compute and
// how its inputs are laid out), in the widest vectors the build targets.
//
// Only the speed depends on that width. A forward output adds its taps' products to the bias in
// tap order, whatever the vectors. A dW lane sum has kSumLanes = 16 lanes on every build: lane l
// adds the products at positions p with p % 16 == l, in position order, in one register where a
// register holds 16 floats and in two or four narrower ones elsewhere; conv2d_direct.cpp adds
// the 16 lanes in one fixed order. (A build without FMA rounds each product before adding it, as
// in every loop of this backend that -march decides.)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace direct_detail {

#if defined(__AVX512F__)
constexpr int kNative = 16;
constexpr bool kManyRegisters = true;  // 32 vector registers
#elif defined(__AVX__)
constexpr int kNative = 8;
constexpr bool kManyRegisters = false;
#else
constexpr int kNative = 4;
constexpr bool kManyRegisters = false;
#endif
// Whether the build's vectors make the direct path pay (conv2d_direct_applies). LeNet's first
// layer on this Zen 5, one thread, batch 128, forward / dW in microseconds, the columns path with
// oneDNN's JIT capped at the same ISA (DNNL_MAX_CPU_ISA) in brackets:
//   -march=native (AVX-512)   336 / 417   (columns 483 / 781)
//   -march=x86-64-v3 (AVX2)   579 / 901   (columns 791 / 1170)
//   -march=x86-64 (SSE2)     2395 / 1993  (columns with AVX-512 oneDNN: 483 / 781)
// so a build for plain x86-64 (-Dnative_cpu=false) keeps the columns path.
#if defined(__FMA__) && defined(__AVX2__)
constexpr bool kDirectPays = true;
#else
constexpr bool kDirectPays = false;
#endif
constexpr int kSumLanes = 16;
constexpr int kSplit = kSumLanes / kNative;  // registers per lane sum

using Vec = float __attribute__((vector_size(kNative * sizeof(float))));

// Register blocks: accumulators plus the operands of one step within the registers (AVX-512: 20
// of 32; AVX2: 12 of 16, measured against 2 x 4, 2 x 5 and 3 x 3 forward blocks and 3 x 2,
// 1 x 4, 1 x 5 and 2 x 2 dW blocks; SSE: whatever fits).
constexpr int kForwardChannels = kManyRegisters ? 5 : 4;
constexpr int kForwardVectors = kManyRegisters ? 4 : 3;
constexpr int kGradientChannels = kManyRegisters ? 4 : kSplit == 2 ? 2 : 1;
constexpr int kGradientTaps = kManyRegisters ? 5 : kSplit == 2 ? 3 : 2;

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, const Vec& v) {
  std::memcpy(p, &v, sizeof v);
}
// The first `count` lanes from p (none for count <= 0), zeros after them.
inline Vec load_first(const float* p, int count) {
  Vec v{};
  for (int l = 0; l < count; ++l) v[l] = p[l];
  return v;
}
// Left alone, GCC folds a load into every FMA that uses it: the dW step then loads each input
// vector once per output channel, and ran LeNet's first layer 1.6x slower (687 us against 436 on
// one thread). An empty asm that takes the vector in a register keeps the one load.
inline void keep_in_register(Vec& v) {
#if defined(__AVX512F__)
  asm("" : "+v"(v));
#elif defined(__SSE__)
  asm("" : "+x"(v));
#else
  (void)v;
#endif
}

// ---- forward ---------------------------------------------------------------------------------

struct ForwardArgs {
  const float* planes;  // one sample's shifted planes
  const int* offsets;   // per tap
  const float* packed;  // weights as [tap][out_channels]
  const float* bias;
  float* y;     // one sample's output, [out_channels][positions]
  float* tail;  // a partial last vector per channel, [kForwardChannels][kNative], for the caller
  int taps, out_channels, positions;
};

// GCC keeps a block's accumulators in registers from one tap to the next only when its loops
// are unrolled before it splits arrays into scalars, hence the pragmas (LeNet's first layer:
// forward 390 -> 355 us, dW 436 -> 400).

// Outputs of channels c0 .. c0+C-1 at positions p0 .. p0+V*kNative-1. Where the last vector ends
// past the last position it goes to a.tail instead: a store of part of a register made GCC keep
// every accumulator in memory.
template <int C, int V>
void forward_block(const ForwardArgs& a, int c0, int p0) {
  Vec acc[C][V];
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[c][v] = Vec{} + a.bias[c0 + c];
  }
  const float* x0 = a.planes + p0;
  const float* w = a.packed + c0;
  for (int t = 0; t < a.taps; ++t, w += a.out_channels) {
    const float* xt = x0 + a.offsets[t];
    Vec xv[V];
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) xv[v] = load(xt + v * kNative);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const float wc = w[c];
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) acc[c][v] += wc * xv[v];
    }
  }
  float* out = a.y + static_cast<std::size_t>(c0) * a.positions + p0;
  const int last = std::min(kNative, a.positions - p0 - (V - 1) * kNative);  // in the last vector
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c, out += a.positions) {
#pragma GCC unroll 16
    for (int v = 0; v + 1 < V; ++v) store(out + v * kNative, acc[c][v]);
    store(last == kNative ? out + (V - 1) * kNative : a.tail + c * kNative, acc[c][V - 1]);
  }
}

using ForwardKernel = void (*)(const ForwardArgs&, int, int);
template <int C, int... V>
constexpr std::array<ForwardKernel, sizeof...(V)> forward_row(std::integer_sequence<int, V...>) {
  return {{&forward_block<C, V + 1>...}};
}
template <int... C>
constexpr auto forward_table(std::integer_sequence<int, C...>) {
  return std::array<std::array<ForwardKernel, kForwardVectors>, sizeof...(C)>{
      {forward_row<C + 1>(std::make_integer_sequence<int, kForwardVectors>())...}};
}
// kForwardKernels[C - 1][V - 1]: the block of C channels and V vectors.
constexpr auto kForwardKernels = forward_table(std::make_integer_sequence<int, kForwardChannels>());

// ---- weight gradient -------------------------------------------------------------------------

struct GradientArgs {
  const float* planes;  // a group of samples' shifted planes, one after another
  const int* offsets;   // per tap
  const float* dy;      // their output gradients, [out_channels][positions] each
  float* sums;          // kSumLanes-lane sums: dw's [out_channels][taps], then db's [out_channels]
  std::size_t planes_stride, dy_stride;  // from one sample to the next
  int samples, taps, out_channels, positions;
};

// Part k of the lane sums gets the products at positions p + k*kNative ...
template <int C, int T, bool kBias>
__attribute__((always_inline)) inline void gradient_step(Vec (&acc)[C][T][kSplit],
                                                         Vec (&bias)[C][kSplit], const Vec (&d)[C],
                                                         const float* const (&xt)[T], int p,
                                                         int k) {
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
    if (kBias) bias[c][k] += d[c];
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    Vec xv = load(xt[t] + p + k * kNative);
    keep_in_register(xv);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c][t][k] += d[c] * xv;
  }
}

// Adds a group of samples' products of channels c0 .. c0+C-1 and taps t0 .. t0+T-1 (and db's
// sums of those channels, with kBias) to their lane sums.
template <int C, int T, bool kBias>
void gradient_block(const GradientArgs& a, int c0, int t0) {
  Vec acc[C][T][kSplit], bias[C][kSplit];
  const auto sum_of = [&](int c, int t) {
    return a.sums + ((c0 + c) * a.taps + t0 + t) * kSumLanes;
  };
  const auto bias_sum_of = [&](int c) {
    return a.sums + (a.out_channels * a.taps + c0 + c) * kSumLanes;
  };
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int k = 0; k < kSplit; ++k) {
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[c][t][k] = load(sum_of(c, t) + k * kNative);
      bias[c][k] = kBias ? load(bias_sum_of(c) + k * kNative) : Vec{};
    }
  }
  for (int n = 0; n < a.samples; ++n) {
    const float* xt[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xt[t] = a.planes + n * a.planes_stride + a.offsets[t0 + t];
    const float* dy = a.dy + n * a.dy_stride + static_cast<std::size_t>(c0) * a.positions;
    Vec d[C];
    int p = 0;
    for (; p + kSumLanes <= a.positions; p += kSumLanes) {
#pragma GCC unroll 16
      for (int k = 0; k < kSplit; ++k) {
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) d[c] = load(dy + c * a.positions + p + k * kNative);
        gradient_step<C, T, kBias>(acc, bias, d, xt, p, k);
      }
    }
    if (p < a.positions) {
      // Zeros past the last position: their products (with finite planes) add nothing.
#pragma GCC unroll 16
      for (int k = 0; k < kSplit; ++k) {
        const int count = std::min(a.positions - p - k * kNative, kNative);
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
          d[c] = load_first(dy + c * a.positions + p + k * kNative, count);
        gradient_step<C, T, kBias>(acc, bias, d, xt, p, k);
      }
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int k = 0; k < kSplit; ++k) {
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) store(sum_of(c, t) + k * kNative, acc[c][t][k]);
      if (kBias) store(bias_sum_of(c) + k * kNative, bias[c][k]);
    }
  }
}

using GradientKernel = void (*)(const GradientArgs&, int, int);
template <int C, int... T>
constexpr std::array<std::array<GradientKernel, 2>, sizeof...(T)> gradient_row(
    std::integer_sequence<int, T...>) {
  return {{{&gradient_block<C, T + 1, false>, &gradient_block<C, T + 1, true>}...}};
}
template <int... C>
constexpr auto gradient_table(std::integer_sequence<int, C...>) {
  return std::array<std::array<std::array<GradientKernel, 2>, kGradientTaps>, sizeof...(C)>{
      {gradient_row<C + 1>(std::make_integer_sequence<int, kGradientTaps>())...}};
}
// kGradientKernels[C - 1][T - 1][with db]: the block of C channels and T taps.
constexpr auto kGradientKernels =
    gradient_table(std::make_integer_sequence<int, kGradientChannels>());

}  // namespace direct_detail
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
