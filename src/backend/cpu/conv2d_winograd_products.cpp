#include "backend/cpu/conv2d_winograd_products.hpp"

#include <algorithm>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

// Register blocks: rows of C times lane vectors of tiles, the accumulators plus the B vectors
// and a broadcast within the registers. 16 lanes (AVX-512): 5 x 4, 20 accumulators of 32
// registers; 5 rows divide LeNet's 20 and 50 channels. 8 lanes (AVX2): 5 x 2, 13 of 16
// registers; 4 x 2, 4 x 3, 6 x 2 and 3 x 4 were within 3% of it (LeNet's second layer, one
// thread).
template <int L>
struct Block;
template <>
struct Block<16> {
  static constexpr int kRows = 5, kVectors = 4;
};
template <>
struct Block<8> {
  static constexpr int kRows = 5, kVectors = 2;
};

// The accumulators start at the first products rather than at zero: GCC zeroed the array with a
// call to memset on every block (1.8% of a ResNet-20 epoch, with blocks of K = 16).
template <int L, int kRows, int kVectors>
void block(int k, const float* a, int a_row, int a_col, const float* b, float* c,
           std::size_t tiles) {
  Lanes<L> acc[kRows][kVectors];
  if (k <= 0) {
    for (int i = 0; i < kRows; ++i)
      for (int v = 0; v < kVectors; ++v) store_lanes<L>(c + i * tiles + v * L, Lanes<L>{});
    return;
  }
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < kVectors; ++v) acc[i][v] = a[i * a_row] * load_lanes<L>(b + v * L);
  for (int q = 1; q < k; ++q) {
    Lanes<L> bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = load_lanes<L>(b + q * tiles + v * L);
    for (int i = 0; i < kRows; ++i) {
      const float s = a[i * a_row + q * a_col];
      for (int v = 0; v < kVectors; ++v) acc[i][v] += s * bv[v];
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < kVectors; ++v) store_lanes<L>(c + i * tiles + v * L, acc[i][v]);
}

// The block of min(rows, kRows) rows and min(vectors, kVectors) lane vectors.
template <int L, int kRows, int kVectors>
void fitting_block(int rows, int vectors, int k, const float* a, int a_row, int a_col,
                   const float* b, float* c, std::size_t tiles) {
  if constexpr (kRows > 1) {
    if (rows < kRows) {
      return fitting_block<L, kRows - 1, kVectors>(rows, vectors, k, a, a_row, a_col, b, c, tiles);
    }
  }
  if constexpr (kVectors > 1) {
    if (vectors < kVectors) {
      return fitting_block<L, kRows, kVectors - 1>(rows, vectors, k, a, a_row, a_col, b, c, tiles);
    }
  }
  block<L, kRows, kVectors>(k, a, a_row, a_col, b, c, tiles);
}

template <int L>
void product(int rows, int k, const float* a, int a_row, int a_col, const float* b, float* c,
             std::size_t tiles) {
  constexpr int kRows = Block<L>::kRows, kVectors = Block<L>::kVectors;
  const int vectors = static_cast<int>(tiles / L);
  for (int v0 = 0; v0 < vectors; v0 += kVectors) {
    const int nv = std::min(kVectors, vectors - v0);
    for (int i0 = 0; i0 < rows; i0 += kRows) {
      const int nr = std::min(kRows, rows - i0);
      fitting_block<L, kRows, kVectors>(nr, nv, k, a + static_cast<std::ptrdiff_t>(i0) * a_row,
                                        a_row, a_col, b + v0 * L, c + i0 * tiles + v0 * L, tiles);
    }
  }
}

}  // namespace

void lanes_product(int lanes, int rows, int k, const float* a, int a_row, int a_col, const float* b,
                   float* c, std::size_t tiles) {
  by_width(lanes,
           [&](auto l) { product<decltype(l)::value>(rows, k, a, a_row, a_col, b, c, tiles); });
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
