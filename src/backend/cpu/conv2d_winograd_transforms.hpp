// The tile transforms of the CPU's Winograd convolution (conv2d_winograd.hpp): the Toom-Cook
// matrices of F(m, r), built at compile time, and their two-dimensional application to L
// tiles at once, one tile per vector lane.
//
// One dimension: for a correlation y[i] = sum_k g[k] d[i + k] of m outputs with an r-tap filter
// over n = m + r - 1 inputs, y = At ((G g) . (Bt d)) with At m x n, G n x r, Bt n x n (. is the
// elementwise product): n multiplications instead of m * r. Two dimensions nest it:
// Y = At [(G g Gt) . (Bt d Btt)] Att. The matrices come from n - 1 interpolation points and the
// point at infinity. Being constants of the template, their zero entries cost nothing once the
// compiler unrolls the loops below.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/lane_vectors.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// Output tile edges m (conv2d_winograd_tiles.hpp's tile_outputs): 2 for 5x5 filters keeps
// F(2, 5)'s float32 error near 7e-6 relative on LeNet's second layer (F(4, 5) doubles it, and
// cuDNN's transform-domain dx was 2% off; docs/CUDA.md). 3x3 filters take m = 4: F(4, 3) needs
// 36 products per 16 outputs against F(2, 3)'s 16 per 4, 1.78x fewer, and its domain is 2.25x
// the activation's size instead of 4x. ResNet-20's layers at batch 128, one thread, CPU time
// (bench/conv3x3_bench, min us, F(2, 3) -> F(4, 3)): 16 x 32x32 forward 4,375 -> 3,057, backward
// 8,493 -> 6,787; 32 x 16x16 2,944 -> 1,925 and 6,292 -> 4,360; 64 x 8x8 2,254 -> 1,501 and
// 5,328 -> 4,375 (bench/RESULTS.md, 2026-12-06, branch f43).
// Tiles transformed together, one per vector lane: L = 16 floats, one AVX-512 register, or
// L = 8, one AVX2 register. A width wider than the build's registers is never compiled
// (lane_vectors.hpp's kRegisterLanes, which says why). The vector types are lane_vectors.hpp's.
//
// The widest width compiled (8 lanes are compiled in every build, so that tests run them on any
// machine), and the width the build sends layers through, 0 for none (winograd_applies). With
// 8 lanes (-march=x86-64-v3 on this Zen 5, one thread, minimum microseconds, against the columns
// path with oneDNN capped at AVX2 by DNNL_MAX_CPU_ISA):
//   LeNet's second layer, batch 128   forward 1,945 (columns 3,389), backward 5,687 (7,042)
//   CIFAR's 32 -> 64 3x3, batch 32    forward 1,844 (2,699), dx 2,482 (2,558)
// Without AVX2 and FMA the columns path stays.
constexpr int kWidestLanes = kRegisterLanes;
#if defined(__AVX2__) && defined(__FMA__)
constexpr int kTakenLanes = kRegisterLanes;
#else
constexpr int kTakenLanes = 0;
#endif

// call(l) with l an integral constant for `lanes`: 16 where the build compiles it, else 8.
template <typename Call>
void by_width(int lanes, Call call) {
  if constexpr (kWidestLanes == 16) {
    if (lanes == 16) return call(std::integral_constant<int, 16>{});
  }
  call(std::integral_constant<int, 8>{});
}

// Filter sizes with interpolation points, and the n - 1 points of a tile of n inputs (both tiles
// have n = 6). 0 and +-1 are exact; the pair 2, -1/2 measured smaller errors than 2, -2 or +-1/2,
// since its products stay near 1: F(2, 5), y 6.8e-6 against 1.9e-5 and 1.5e-5 relative (LeNet's
// second layer at batch 128); F(4, 3), y 1.4e-6 to 2.1e-6 against 3.4e-6 to 6.2e-6 (+-2) and
// 4.3e-6 to 5.1e-6 (+-1/2), dx 1.2e-6 to 2.9e-6 against 1.7e-6 to 3.4e-6 and 1.6e-6 to 3.2e-6
// (largest error over largest value, a float32 emulation on ResNet-20's three layer shapes, where
// F(2, 3) gave 2.6e-7 to 3.4e-7). The CPU code itself on those shapes
// (tests/backend/test_winograd_transforms.cpp, 8 and 16 lanes): y 1.3e-6 to 2.9e-6, dx 1.1e-6
// to 1.5e-6, dw 8.5e-7 to 1.2e-6.
constexpr bool has_transform(int r) {
  return r == 3 || r == 5;
}
template <int kFinite>
constexpr std::array<double, kFinite> kPoints = {};
template <>
inline constexpr std::array<double, 5> kPoints<5> = {0.0, 1.0, -1.0, 2.0, -0.5};

// F(M, R), row-major: at (M x n), g (n x R), bt (n x n).
template <int M, int R>
struct Matrices {
  static constexpr int n = M + R - 1;
  std::array<float, M * n> at{};
  std::array<float, n * R> g{};
  std::array<float, n * n> bt{};
};

constexpr double power(double x, int k) {
  double v = 1.0;
  for (int i = 0; i < k; ++i) v *= x;
  return v;
}

// Toom-Cook: At evaluates the output polynomial's pieces at the points, G the filter's (with the
// Lagrange denominators), Bt's rows are the coefficients of the products of (x - p) over all
// points but one (all of them for the last row, the point at infinity).
template <int M, int R>
constexpr Matrices<M, R> build_matrices() {
  constexpr int n = Matrices<M, R>::n, finite = n - 1;
  const auto& p = kPoints<finite>;
  Matrices<M, R> t{};
  for (int k = 0; k < M; ++k) {
    for (int i = 0; i < finite; ++i) t.at[k * n + i] = static_cast<float>(power(p[i], k));
    t.at[k * n + finite] = k == M - 1 ? 1.0f : 0.0f;
  }
  for (int i = 0; i < finite; ++i) {
    double denominator = 1.0;
    for (int j = 0; j < finite; ++j) denominator *= j != i ? p[i] - p[j] : 1.0;
    for (int k = 0; k < R; ++k) t.g[i * R + k] = static_cast<float>(power(p[i], k) / denominator);
  }
  for (int k = 0; k < R; ++k) t.g[finite * R + k] = k == R - 1 ? 1.0f : 0.0f;
  for (int i = 0; i <= finite; ++i) {
    std::array<double, n + 1> c{};
    c[0] = 1.0;
    int degree = 0;
    for (int j = 0; j < finite; ++j) {
      if (j == i) continue;
      for (int k = degree + 1; k > 0; --k) c[k] = c[k - 1] - p[j] * c[k];
      c[0] = -p[j] * c[0];
      ++degree;
    }
    for (int l = 0; l < n; ++l) t.bt[i * n + l] = static_cast<float>(c[l]);
  }
  return t;
}

template <int M, int R>
inline constexpr Matrices<M, R> kMatrices = build_matrices<M, R>();

// out(i, c) = sum over k < kInner of M(i, k) in(k, c), for i < kRows and c < kCols, with
// M(i, k) = m[i * kMRow + k * kMCol], in(k, c) = in[k * kInRow + c * kInCol] and out(i, c) =
// out[i * kOutRow + c * kOutCol]: M in (left) and, with in and out read transposed, in Mt
// (right).
template <int kRows, int kInner, int kCols, int kMRow, int kMCol, int kInRow, int kInCol,
          int kOutRow, int kOutCol, std::size_t kSize, typename V>
inline void combine(const std::array<float, kSize>& m, const V* in, V* out) {
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) {
      V s{};
#pragma GCC unroll 8
      for (int k = 0; k < kInner; ++k) {
        const float coefficient = m[i * kMRow + k * kMCol];
        if (coefficient != 0.0f) s += coefficient * in[k * kInRow + c * kInCol];
      }
      out[i * kOutRow + c * kOutCol] = s;
    }
  }
}

// out (rows x cols) = M in, M rows x inner (element (i, k) at m[i * kRow + k * kCol]).
template <int kRows, int kInner, int kCols, int kRow, int kCol, std::size_t kSize, typename V>
inline void left(const std::array<float, kSize>& m, const V* in, V* out) {
  combine<kRows, kInner, kCols, kRow, kCol, kCols, 1, kCols, 1>(m, in, out);
}

// out (rows x cols) = in Mt, in rows x inner, M cols x inner (element (j, k) as above).
template <int kRows, int kInner, int kCols, int kRow, int kCol, std::size_t kSize, typename V>
inline void right(const std::array<float, kSize>& m, const V* in, V* out) {
  combine<kCols, kInner, kRows, kRow, kCol, 1, kInner, 1, kCols>(m, in, out);
}

// Tiles are row-major arrays of lane vectors: n x n (d, V, M, dM, dV) or M x M (y, dY).
// V = Bt d Btt.
template <int M, int R, typename V>
inline void input_transform(const V* d, V* v) {
  constexpr int n = Matrices<M, R>::n;
  V tmp[n * n];
  left<n, n, n, n, 1>(kMatrices<M, R>.bt, d, tmp);
  right<n, n, n, n, 1>(kMatrices<M, R>.bt, tmp, v);
}
// dd = Btt dV Bt, the adjoint.
template <int M, int R, typename V>
inline void input_transform_adjoint(const V* dv, V* dd) {
  constexpr int n = Matrices<M, R>::n;
  V tmp[n * n];
  left<n, n, n, 1, n>(kMatrices<M, R>.bt, dv, tmp);
  right<n, n, n, 1, n>(kMatrices<M, R>.bt, tmp, dd);
}
// y = At M Att.
template <int M, int R, typename V>
inline void output_transform(const V* m, V* y) {
  constexpr int n = Matrices<M, R>::n, o = M;
  V tmp[o * n];
  left<o, n, n, n, 1>(kMatrices<M, R>.at, m, tmp);
  right<o, n, o, n, 1>(kMatrices<M, R>.at, tmp, y);
}
// dM = Att dY At, the adjoint.
template <int M, int R, typename V>
inline void output_transform_adjoint(const V* dy, V* dm) {
  constexpr int n = Matrices<M, R>::n, o = M;
  V tmp[n * o];
  left<n, o, o, 1, n>(kMatrices<M, R>.at, dy, tmp);
  right<n, o, n, 1, n>(kMatrices<M, R>.at, tmp, dm);
}
// U = G g Gt.
template <int M, int R, typename V>
inline void filter_transform(const V* g, V* u) {
  constexpr int n = Matrices<M, R>::n;
  V tmp[n * R];
  left<n, R, R, R, 1>(kMatrices<M, R>.g, g, tmp);
  right<n, R, n, R, 1>(kMatrices<M, R>.g, tmp, u);
}

// dw = Gt dU G, the adjoint (a weight gradient from the domain's).
template <int M, int R, typename V>
inline void filter_transform_adjoint(const V* du, V* dw) {
  constexpr int n = Matrices<M, R>::n;
  V tmp[R * n];
  left<R, n, n, 1, R>(kMatrices<M, R>.g, du, tmp);
  right<R, n, R, 1, R>(kMatrices<M, R>.g, tmp, dw);
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
