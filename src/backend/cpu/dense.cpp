#include "backend/cpu/dense.hpp"

#include <cblas.h>

#include <algorithm>

#include "backend/cpu/thread_pool.hpp"

// A large layer (LeNet's 800 -> 500 at batch 128) is cut into kWorkSlices fixed slices run by
// parallel_slices, each with single-threaded GEMMs, which measured faster than one GEMM split by
// OpenBLAS over the same two threads (forward 435 -> 390 us, backward 950 -> 890 us). Slices cut
// the feature columns, not the batch: y, dW and db by output columns, dx by input columns, so
// each slice packs only its own part of the (large) weight matrix; cut by batch rows, both slices
// packed all of it, which measured slower. Every element of y, dx, dW and db is computed within
// one slice, its whole sum in one GEMM (or one loop), so the slices need no reduction and the
// result is the same for any thread count. On one thread the two GEMMs per pass cost more than
// one (forward up to +120 us, backward up to +290 us), the price of that. A small layer (the output
// layer) stays one call: waking the pool costs more than it saves there.

namespace dl::cpu {

namespace {

// Multiply-adds of one pass below which the layer runs as one call (LeNet's output layer: 640k).
constexpr long long kMinSlicedMacs = 1LL << 22;

bool sliced(int n, int in, int out) {
  return static_cast<long long>(n) * in * out >= kMinSlicedMacs;
}

// [begin, end) of slice i of `count` items.

// y[:, cols] = x w[:, cols] + b[cols]
void forward_columns(SliceRange cols, int n, int in, int out, const float* x, const float* w,
                     const float* b, float* y) {
  if (cols.size() == 0) return;
  // Start every row of y at the bias and let the GEMM accumulate onto it (beta = 1).
  for (int r = 0; r < n; ++r) {
    std::copy(b + cols.begin, b + cols.end, y + static_cast<std::size_t>(r) * out + cols.begin);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cols.size(), in, 1.0f, x, in,
              w + cols.begin, out, 1.0f, y + cols.begin, out);
}

// dW and db for output columns `cols`: dw[in x cols] = x^T dy[:, cols], db = their column sums.
void weight_gradient_columns(SliceRange cols, int n, int in, int out, const float* x,
                             const float* dy, float* dw, float* db) {
  if (cols.size() == 0) return;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, cols.size(), n, 1.0f, x, in,
              dy + cols.begin, out, 0.0f, dw + cols.begin, out);
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
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, cols.size(), out, 1.0f, dy, out,
              w + static_cast<std::size_t>(cols.begin) * out, out, 0.0f, dx + cols.begin, in);
}

}  // namespace

void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b,
                   float* y) {
  if (!sliced(n, in, out)) return forward_columns({0, out}, n, in, out, x, w, b, y);
  parallel_slices(kWorkSlices, [&](int i) {
    forward_columns(slice_range(out, kWorkSlices, i), n, in, out, x, w, b, y);
  });
}

void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                    float* dx, float* dw, float* db) {
  const auto slice = [&](int i, int slices) {
    weight_gradient_columns(slice_range(out, slices, i), n, in, out, x, dy, dw, db);
    if (dx != nullptr) input_gradient_columns(slice_range(in, slices, i), n, in, out, w, dy, dx);
  };
  if (!sliced(n, in, out)) return slice(0, 1);
  parallel_slices(kWorkSlices, [&](int i) { slice(i, kWorkSlices); });
}

}  // namespace dl::cpu
