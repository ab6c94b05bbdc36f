#include "backend/cpu/dense.hpp"

#include <algorithm>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thread_pool.hpp"

// A large layer (LeNet's 800 -> 500 at batch 128) is cut into tiles of its outputs, run by
// parallel_slices, each with single-threaded GEMMs, which measured faster than one GEMM split by
// OpenBLAS over the same two threads. Every element of y, dx, dW and db is computed within one
// tile, its whole sum in one GEMM (or one loop), so the tiles need no reduction, and their
// boundaries depend on the layer's size alone: the result is the same for any thread count.
// Tile shapes, from timings of LeNet's layer with oneDNN's sgemm: y in 128 rows x 32 columns (16
// tiles; 64-row tiles cost nothing on one thread but 25% on two) and dW in 400 input rows x 32
// output columns (32 tiles) cost nothing against whole products; dx keeps 128 input columns by
// every row (7 tiles), since narrower dx tiles, or fewer rows, measured 5-15% slower (the product
// dy w^T packs its B per tile). A small layer (the output layer) stays one product per pass:
// waking the pool for its tiles costs more than they save; its backward runs dW as one task beside
// dx's column tiles (LeNet's output layer: 4 tiles of dx, whose products of depth 10 took 3% of
// the step on a 16-core Xeon as one task).

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

// Multiply-adds of one pass below which the layer runs as one call (LeNet's output layer: 640k).
constexpr long long kMinSlicedMacs = 1LL << 22;

// Tile sizes (see above).
constexpr int kForwardRowsPerTile = 128;
constexpr int kWeightRowsPerTile = 400;
constexpr int kColumnsPerTile = 32;        // of y and dW
constexpr int kInputColumnsPerTile = 128;  // of dx

bool sliced(int n, int in, int out) {
  return static_cast<long long>(n) * in * out >= kMinSlicedMacs;
}

SliceRange part_of(int count, int per_part, int part) {
  return {std::min(count, part * per_part), std::min(count, (part + 1) * per_part)};
}

// y[rows, cols] = x[rows] w[:, cols] + b[cols]
void forward_tile(SliceRange rows, SliceRange cols, int in, int out, const float* x, const float* w,
                  const float* b, float* y) {
  if (rows.size() == 0 || cols.size() == 0) return;
  // Start every row of y at the bias and let the GEMM accumulate onto it (beta = 1).
  for (int r = rows.begin; r < rows.end; ++r) {
    std::copy(b + cols.begin, b + cols.end, y + static_cast<std::size_t>(r) * out + cols.begin);
  }
  float* y0 = y + static_cast<std::size_t>(rows.begin) * out + cols.begin;
  sgemm(false, false, rows.size(), cols.size(), in, 1.0f,
        x + static_cast<std::size_t>(rows.begin) * in, in, w + cols.begin, out, 1.0f, y0, out);
}

// dW[ins, cols] = x[:, ins]^T dy[:, cols]; with `bias`, also db[cols] = column sums of dy.
void weight_gradient_tile(SliceRange ins, SliceRange cols, bool bias, int n, int in, int out,
                          const float* x, const float* dy, float* dw, float* db) {
  if (ins.size() == 0 || cols.size() == 0) return;
  sgemm(true, false, ins.size(), cols.size(), n, 1.0f, x + ins.begin, in, dy + cols.begin, out,
        0.0f, dw + static_cast<std::size_t>(ins.begin) * out + cols.begin, out);
  if (!bias) return;
  // The inner loop runs along a row, so it vectorizes.
  float* __restrict sums = db + cols.begin;
  std::fill(sums, sums + cols.size(), 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* __restrict row = dy + static_cast<std::size_t>(r) * out + cols.begin;
    for (int c = 0; c < cols.size(); ++c) sums[c] += row[c];
  }
}

// dx[:, cols] = dy w[cols, :]^T, for input columns `cols`.
void input_gradient_columns(SliceRange cols, int n, int in, int out, const float* w,
                            const float* dy, float* dx) {
  if (cols.size() == 0) return;
  sgemm(false, true, n, cols.size(), out, 1.0f, dy, out,
        w + static_cast<std::size_t>(cols.begin) * out, out, 0.0f, dx + cols.begin, in);
}

}  // namespace

void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                   float* y) {
  if (!sliced(n, in, out)) return forward_tile({0, n}, {0, out}, in, out, x, w, b, y);
  const int row_tiles = task_count(n, kForwardRowsPerTile);
  const int col_tiles = task_count(out, kColumnsPerTile);
  parallel_slices(row_tiles * col_tiles, [&](int i) {
    forward_tile(part_of(n, kForwardRowsPerTile, i / col_tiles),
                 part_of(out, kColumnsPerTile, i % col_tiles), in, out, x, w, b, y);
  });
}

// The dx tiles (the larger) come first, then the dW tiles; the dW tiles of the first input rows
// also sum db.
void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                    float* dx, float* dw, float* db) {
  const int input_tiles = dx != nullptr ? task_count(in, kInputColumnsPerTile) : 0;
  if (!sliced(n, in, out)) {
    // dW with db as one product, beside dx in its column tiles.
    parallel_slices(1 + input_tiles, [&](int i) {
      if (i == 0) return weight_gradient_tile({0, in}, {0, out}, true, n, in, out, x, dy, dw, db);
      input_gradient_columns(part_of(in, kInputColumnsPerTile, i - 1), n, in, out, w, dy, dx);
    });
    return;
  }
  const int col_tiles = task_count(out, kColumnsPerTile);
  const int weight_tiles = task_count(in, kWeightRowsPerTile) * col_tiles;
  parallel_slices(input_tiles + weight_tiles, [&](int i) {
    if (i < input_tiles) {
      return input_gradient_columns(part_of(in, kInputColumnsPerTile, i), n, in, out, w, dy, dx);
    }
    const int t = i - input_tiles;
    weight_gradient_tile(part_of(in, kWeightRowsPerTile, t / col_tiles),
                         part_of(out, kColumnsPerTile, t % col_tiles), t < col_tiles, n, in, out, x,
                         dy, dw, db);
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
