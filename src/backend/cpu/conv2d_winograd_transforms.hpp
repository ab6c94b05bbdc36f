// The tile transforms of the CPU's Winograd convolution (conv2d_winograd.hpp): the Toom-Cook
// matrices of F(m, r), built at compile time, and their two-dimensional application to kLanes
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

namespace dl::cpu::winograd {

// Output tile edge. m = 2 keeps F(2, 5)'s float32 error near 7e-6 relative on LeNet's second
// layer (F(4, 5) doubles it, and cuDNN's transform-domain dx was 2% off; docs/CUDA.md).
constexpr int kTileOutputs = 2;
// Tiles transformed together: one float per lane of a 512-bit register; on narrower machines the
// compiler splits each vector in two.
constexpr int kLanes = 16;

using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));

// Whether the build's vectors make this path pay. With AVX-512 a Lanes value is one register;
// GCC lowers the same code to scalar loops for narrower builds, where LeNet's second layer's
// forward pass took 29.5 ms instead of 1.3 (one thread, this Zen 5 built with -march=x86-64-v3),
// so those builds keep the columns path (winograd_applies).
#if defined(__AVX512F__)
constexpr bool kWinogradPays = true;
#else
constexpr bool kWinogradPays = false;
#endif

// A vector of floats from or to memory with any alignment.
template <typename Vector>
inline Vector load_vector(const float* p) {
  Vector v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <typename Vector>
inline void store_vector(float* p, Vector v) {
  __builtin_memcpy(p, &v, sizeof v);
}
inline Lanes load_lanes(const float* p) {
  return load_vector<Lanes>(p);
}
inline void store_lanes(float* p, Lanes v) {
  store_vector(p, v);
}

// Filter sizes with interpolation points, and the points. 0 and +-1 are exact; for r = 5 the
// pair 2, -1/2 measured smaller errors than 2, -2 or +-1/2 (y 6.8e-6 against 1.9e-5 and 1.5e-5
// relative, LeNet's second layer at batch 128), since its products stay near 1.
constexpr bool has_transform(int r) {
  return r == 3 || r == 5;
}
template <int R>
constexpr std::array<double, R> kPoints = {};
template <>
inline constexpr std::array<double, 3> kPoints<3> = {0.0, 1.0, -1.0};
template <>
inline constexpr std::array<double, 5> kPoints<5> = {0.0, 1.0, -1.0, 2.0, -0.5};

// F(kTileOutputs, R), row-major: at (m x n), g (n x R), bt (n x n).
template <int R>
struct Matrices {
  static constexpr int n = kTileOutputs + R - 1;
  std::array<float, kTileOutputs * n> at{};
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
template <int R>
constexpr Matrices<R> build_matrices() {
  constexpr int n = Matrices<R>::n, finite = n - 1;
  const auto& p = kPoints<R>;
  Matrices<R> t{};
  for (int k = 0; k < kTileOutputs; ++k) {
    for (int i = 0; i < finite; ++i) t.at[k * n + i] = static_cast<float>(power(p[i], k));
    t.at[k * n + finite] = k == kTileOutputs - 1 ? 1.0f : 0.0f;
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

template <int R>
inline constexpr Matrices<R> kMatrices = build_matrices<R>();

// out(i, c) = sum over k < kInner of M(i, k) in(k, c), for i < kRows and c < kCols, with
// M(i, k) = m[i * kMRow + k * kMCol], in(k, c) = in[k * kInRow + c * kInCol] and out(i, c) =
// out[i * kOutRow + c * kOutCol]: M in (left) and, with in and out read transposed, in Mt
// (right).
template <int kRows, int kInner, int kCols, int kMRow, int kMCol, int kInRow, int kInCol,
          int kOutRow, int kOutCol, std::size_t kSize>
inline void combine(const std::array<float, kSize>& m, const Lanes* in, Lanes* out) {
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 8
    for (int c = 0; c < kCols; ++c) {
      Lanes s{};
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
template <int kRows, int kInner, int kCols, int kRow, int kCol, std::size_t kSize>
inline void left(const std::array<float, kSize>& m, const Lanes* in, Lanes* out) {
  combine<kRows, kInner, kCols, kRow, kCol, kCols, 1, kCols, 1>(m, in, out);
}

// out (rows x cols) = in Mt, in rows x inner, M cols x inner (element (j, k) as above).
template <int kRows, int kInner, int kCols, int kRow, int kCol, std::size_t kSize>
inline void right(const std::array<float, kSize>& m, const Lanes* in, Lanes* out) {
  combine<kCols, kInner, kRows, kRow, kCol, 1, kInner, 1, kCols>(m, in, out);
}

// Tiles are row-major arrays of lane vectors: n x n (d, V, M, dM, dV) or m x m (y, dY).
// V = Bt d Btt.
template <int R>
inline void input_transform(const Lanes* d, Lanes* v) {
  constexpr int n = Matrices<R>::n;
  Lanes tmp[n * n];
  left<n, n, n, n, 1>(kMatrices<R>.bt, d, tmp);
  right<n, n, n, n, 1>(kMatrices<R>.bt, tmp, v);
}
// dd = Btt dV Bt, the adjoint.
template <int R>
inline void input_transform_adjoint(const Lanes* dv, Lanes* dd) {
  constexpr int n = Matrices<R>::n;
  Lanes tmp[n * n];
  left<n, n, n, 1, n>(kMatrices<R>.bt, dv, tmp);
  right<n, n, n, 1, n>(kMatrices<R>.bt, tmp, dd);
}
// y = At M Att.
template <int R>
inline void output_transform(const Lanes* m, Lanes* y) {
  constexpr int n = Matrices<R>::n, o = kTileOutputs;
  Lanes tmp[o * n];
  left<o, n, n, n, 1>(kMatrices<R>.at, m, tmp);
  right<o, n, o, n, 1>(kMatrices<R>.at, tmp, y);
}
// dM = Att dY At, the adjoint.
template <int R>
inline void output_transform_adjoint(const Lanes* dy, Lanes* dm) {
  constexpr int n = Matrices<R>::n, o = kTileOutputs;
  Lanes tmp[n * o];
  left<n, o, o, 1, n>(kMatrices<R>.at, dy, tmp);
  right<n, o, n, 1, n>(kMatrices<R>.at, tmp, dm);
}
// U = G g Gt.
template <int R>
inline void filter_transform(const Lanes* g, Lanes* u) {
  constexpr int n = Matrices<R>::n;
  Lanes tmp[n * R];
  left<n, R, R, R, 1>(kMatrices<R>.g, g, tmp);
  right<n, R, n, R, 1>(kMatrices<R>.g, tmp, u);
}

}  // namespace dl::cpu::winograd
