#include "backend/cpu/conv2d_winograd_products.hpp"

#include <algorithm>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu::winograd {

namespace {

// Register block: kBlockRows rows of C times kBlockVectors lane vectors of tiles, 20
// accumulators (of 32 AVX-512 registers), plus the B vectors and a broadcast. 5 rows divide
// LeNet's 20 and 50 channels.
constexpr int kBlockRows = 5;
constexpr int kBlockVectors = 4;

template <int kRows, int kVectors>
void block(int k, const float* a, int a_row, int a_col, const float* b, float* c,
           std::size_t tiles) {
  Lanes acc[kRows][kVectors] = {};
  for (int q = 0; q < k; ++q) {
    Lanes bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = load_lanes(b + q * tiles + v * kLanes);
    for (int i = 0; i < kRows; ++i) {
      const float s = a[i * a_row + q * a_col];
      for (int v = 0; v < kVectors; ++v) acc[i][v] += s * bv[v];
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < kVectors; ++v) store_lanes(c + i * tiles + v * kLanes, acc[i][v]);
}

template <int kVectors>
void rows_block(int rows, int k, const float* a, int a_row, int a_col, const float* b, float* c,
                std::size_t tiles) {
  switch (rows) {
    case 1:
      return block<1, kVectors>(k, a, a_row, a_col, b, c, tiles);
    case 2:
      return block<2, kVectors>(k, a, a_row, a_col, b, c, tiles);
    case 3:
      return block<3, kVectors>(k, a, a_row, a_col, b, c, tiles);
    case 4:
      return block<4, kVectors>(k, a, a_row, a_col, b, c, tiles);
    default:
      return block<kBlockRows, kVectors>(k, a, a_row, a_col, b, c, tiles);
  }
}

}  // namespace

void lanes_product(int rows, int k, const float* a, int a_row, int a_col, const float* b, float* c,
                   std::size_t tiles) {
  const int vectors = static_cast<int>(tiles / kLanes);
  for (int v0 = 0; v0 < vectors; v0 += kBlockVectors) {
    const int nv = std::min(kBlockVectors, vectors - v0);
    for (int i0 = 0; i0 < rows; i0 += kBlockRows) {
      const int nr = std::min(kBlockRows, rows - i0);
      const float* ai = a + static_cast<std::ptrdiff_t>(i0) * a_row;
      const float* bv = b + v0 * kLanes;
      float* ci = c + i0 * tiles + v0 * kLanes;
      switch (nv) {
        case 1:
          rows_block<1>(nr, k, ai, a_row, a_col, bv, ci, tiles);
          break;
        case 2:
          rows_block<2>(nr, k, ai, a_row, a_col, bv, ci, tiles);
          break;
        case 3:
          rows_block<3>(nr, k, ai, a_row, a_col, bv, ci, tiles);
          break;
        default:
          rows_block<kBlockVectors>(nr, k, ai, a_row, a_col, bv, ci, tiles);
      }
    }
  }
}

}  // namespace dl::cpu::winograd
