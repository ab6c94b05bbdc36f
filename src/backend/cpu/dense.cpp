#include "backend/cpu/dense.hpp"

#include <algorithm>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thread_pool.hpp"

// A large layer (LeNet's 800 -> 500 at batch 128) is cut into tasks of kColumnsPerTask feature
// columns run by parallel_slices, each with single-threaded GEMMs, which measured faster than one
// GEMM split by OpenBLAS over the same two threads (forward 435 -> 390 us, backward 950 -> 890
// us). Tasks cut the feature columns, not the batch: y, dW and db by output columns, dx by input
// columns, so each task packs only its own part of the (large) weight matrix; cut by batch rows,
// every task packed all of it, which measured slower. Every element of y, dx, dW and db is
// computed within one task, its whole sum in one GEMM (or one loop), so the tasks need no
// reduction, and their boundaries depend on the layer's size alone: the result is the same for
// any thread count. A small layer (the output layer) stays one call: waking the pool costs more
// than it saves there.

namespace dl::cpu {

namespace {

// Multiply-adds of one pass below which the layer runs as one call (LeNet's output layer: 640k).
constexpr long long kMinSlicedMacs = 1LL << 22;

// Feature columns per task (LeNet's dense layer: 4 tasks for y and dW, 7 for dx).
constexpr int kColumnsPerTask = 128;

bool sliced(int n, int in, int out) {
  return static_cast<long long>(n) * in * out >= kMinSlicedMacs;
}

SliceRange columns_of_task(int count, int task) {
  return {std::min(count, task * kColumnsPerTask), std::min(count, (task + 1) * kColumnsPerTask)};
}

// y[:, cols] = x w[:, cols] + b[cols]
void forward_columns(SliceRange cols, int n, int in, int out, const float* x, const float* w,
                     const float* b, float* y) {
  if (cols.size() == 0) return;
  // Start every row of y at the bias and let the GEMM accumulate onto it (beta = 1).
  for (int r = 0; r < n; ++r) {
    std::copy(b + cols.begin, b + cols.end, y + static_cast<std::size_t>(r) * out + cols.begin);
  }
  sgemm(false, false, n, cols.size(), in, 1.0f, x, in, w + cols.begin, out, 1.0f, y + cols.begin,
        out);
}

// dW and db for output columns `cols`: dw[in x cols] = x^T dy[:, cols], db = their column sums.
void weight_gradient_columns(SliceRange cols, int n, int in, int out, const float* x,
                             const float* dy, float* dw, float* db) {
  if (cols.size() == 0) return;
  sgemm(true, false, in, cols.size(), n, 1.0f, x, in, dy + cols.begin, out, 0.0f, dw + cols.begin,
        out);
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
  if (!sliced(n, in, out)) return forward_columns({0, out}, n, in, out, x, w, b, y);
  parallel_slices(task_count(out, kColumnsPerTask),
                  [&](int i) { forward_columns(columns_of_task(out, i), n, in, out, x, w, b, y); });
}

// Tasks cover the output columns (dW, db) and the input columns (dx); task i does both its parts.
void dense_backward(int n, int in, int out, const float* x, const float* w, const float* dy,
                    float* dx, float* dw, float* db) {
  if (!sliced(n, in, out)) {
    weight_gradient_columns({0, out}, n, in, out, x, dy, dw, db);
    if (dx != nullptr) input_gradient_columns({0, in}, n, in, out, w, dy, dx);
    return;
  }
  const int weight_tasks = task_count(out, kColumnsPerTask);
  const int input_tasks = dx != nullptr ? task_count(in, kColumnsPerTask) : 0;
  parallel_slices(std::max(weight_tasks, input_tasks), [&](int i) {
    if (i < weight_tasks) {
      weight_gradient_columns(columns_of_task(out, i), n, in, out, x, dy, dw, db);
    }
    if (i < input_tasks) input_gradient_columns(columns_of_task(in, i), n, in, out, w, dy, dx);
  });
}

}  // namespace dl::cpu
