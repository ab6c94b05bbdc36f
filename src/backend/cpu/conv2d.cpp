#include "backend/cpu/conv2d.hpp"

#include <algorithm>
#include <functional>

#include "backend/cpu/conv2d_columns.hpp"
#include "backend/cpu/conv2d_direct.hpp"
#include "backend/cpu/conv2d_winograd.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "core/error.hpp"

// im2col writes a chunk of samples' input windows as columns [K x S] (K = in_channels*kh*kw,
// S = samples*out_h*out_w, columns ordered (n, oh, ow); conv2d_columns.hpp) and one sgemm per pass
// does the arithmetic:
//   forward   y    = W[Cout x K] * col
//   backward  dW  += dy[Cout x S] * col^T      db += row sums of dy
//                   (or dy * col_t, with the columns built transposed, for layers with few rows)
//             dcol = W^T * dy, folded back into dx by col2im
// Chunks keep the columns in L2 instead of streaming a whole-batch column matrix (tens of MB for
// LeNet's second layer) through memory; backward recomputes them from x, which measured faster
// than keeping them from the forward pass. A one-sample product [Cout x out_h*out_w] is already
// that sample's NCHW output, so GEMMs write y and read dy in place; larger chunks go through a
// [Cout x S] buffer, scattered to NCHW.
//
// Work is cut into tasks run by parallel_slices, each with single-threaded GEMMs (gemm.hpp), whose
// boundaries follow from the layer's size alone, so the result is the same on any thread count:
//  - forward, and backward's dx: a few samples per task (kTaskColumns output columns and kTaskMacs
//    multiply-adds; LeNet conv2: 2 samples, 64 tasks at batch 128; conv1: 4 samples, 32 tasks).
//    oneDNN's product is as fast per column at 64 columns as at 512, so small tasks cost the
//    product nothing.
//  - backward's dW and db: a sum over samples, so each task sums its own samples' partial
//    (kMacsPerPartialFloat sets how many: LeNet conv2 8, conv1 1), one sample at a time, and
//    the partials are then added in task order, spread over the weights. Whole-width products of
//    one sample each (50 x 500 x 64 for conv2) run at oneDNN's full speed; cutting the weights
//    into column groups instead would shrink them (125 columns: 30% slower per flop).
// The dW tasks come first in the task list, so the longest start first.
//
// The chunk's columns (reused for dcol in backward) and the [Cout x S] buffer are the running
// thread's scratch (thread_scratch); the workspace holds the partial dW and db of every dW task
// but the first, which sums straight into dW and db.

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using conv_detail::col2im_any;
using conv_detail::im2col_any;
using conv_detail::im2row_any;
using conv_detail::kCopySlack;

// Output columns (samples * out_h * out_w) a forward or dx task takes at least.
constexpr std::size_t kTaskColumns = 128;
// ... and at least this many multiply-adds: smaller tasks of LeNet's first layer (one sample,
// 288k) ran its forward pass 45% slower on two threads than tasks of 4 samples.
constexpr std::size_t kTaskMacs = std::size_t{1} << 20;
// A dW task takes enough samples for this many multiply-adds per float of its partial: adding a
// partial is memory-bound, about ten times dearer per float than a multiply-add in the product,
// so 512 keeps the sum of partials near 2% of the product (LeNet conv2: 16 partials of 8
// samples). 1024 (8 partials of 16) cost the same on 1 and 2 threads but left half of a 16-core
// Xeon idle in conv2's dW, the step's longest op there (1.0 ms of 2.5 at 16 threads); 256 (32
// of 4) measured 1% slower on 2 threads.
constexpr std::size_t kMacsPerPartialFloat = 512;
// Below this many rows of col (in_channels*kh*kw), backward's dW takes its columns transposed
// (im2row) for a product without transposes: oneDNN's dy * col^T for LeNet's first layer
// (20 x 25 x 576) ran at 79 GFLOP/s, dy * col_t at 185; for the second (50 x 500 x 64) the two
// products differ by 10%, less than the slower copy costs.
constexpr std::size_t kTransposedColumnsBelow = 64;
// Floats of dW each task of the partials' sum adds up; fewer where the threads are many
// (items_per_task: each float is summed by one task), down to kLeastReduceFloats.
constexpr std::size_t kReduceFloats = 4096;
constexpr std::size_t kLeastReduceFloats = 512;
// Partial sums kept side by side when reducing a row: one AVX-512 register's worth of lanes.
constexpr int kSumLanes = 16;

struct Plan {
  std::size_t k = 0;         // rows of col: in_channels * kernel_height * kernel_width
  std::size_t ohw = 0;       // one output plane
  std::size_t x_sample = 0;  // floats of one sample's input
  std::size_t y_sample = 0;  // floats of one sample's output
  std::size_t weights = 0;   // out_channels * k
  int task_samples = 1;      // per forward and dx task (forward: one GEMM)
  int partial_samples = 1;   // per dW task
  int tasks = 1;             // forward and dx tasks
  int partials = 1;          // dW tasks
};

Plan plan_of(const Conv2dGeometry& g) {
  Plan s;
  s.k = static_cast<std::size_t>(g.in_channels) * g.kernel_height * g.kernel_width;
  s.ohw = static_cast<std::size_t>(g.out_height) * g.out_width;
  s.x_sample = static_cast<std::size_t>(g.in_channels) * g.in_height * g.in_width;
  s.y_sample = static_cast<std::size_t>(g.out_channels) * s.ohw;
  s.weights = static_cast<std::size_t>(g.out_channels) * s.k;
  const int batch = std::max(g.batch, 1);
  const auto samples_for = [&](std::size_t per_task) {
    const std::size_t per_sample = std::max<std::size_t>(s.ohw, 1);
    return static_cast<int>(std::clamp<std::size_t>((per_task + per_sample - 1) / per_sample, 1,
                                                    static_cast<std::size_t>(batch)));
  };
  const std::size_t sample_macs = std::max<std::size_t>(s.weights * s.ohw, 1);
  // Not cut by the thread count (items_per_task): a task's samples are one product, whose bits
  // the library may compute differently for another count of columns (CBLAS did).
  s.task_samples = std::max(samples_for(kTaskColumns),
                            samples_for((kTaskMacs + sample_macs - 1) / sample_macs * s.ohw));
  s.partial_samples = samples_for(kMacsPerPartialFloat);
  s.tasks = task_count(g.batch, s.task_samples);
  s.partials = task_count(g.batch, s.partial_samples);
  return s;
}

std::size_t col_floats(const Plan& s) {
  return round_up_to_lines(s.k * s.ohw * s.task_samples + kCopySlack);
}
std::size_t out_buffer_floats(const Conv2dGeometry& g, const Plan& s) {
  return s.task_samples > 1
             ? round_up_to_lines(static_cast<std::size_t>(g.out_channels) * s.ohw * s.task_samples)
             : 0;
}
std::size_t scratch_floats(const Conv2dGeometry& g, const Plan& s) {
  return col_floats(s) + out_buffer_floats(g, s);
}
bool transposed_columns(const Plan& s) {
  return s.k < kTransposedColumnsBelow;
}
// Backward's scratch: a sample's columns (or dcol) and, where im2row transposes im2col's columns,
// those columns too.
std::size_t backward_scratch_floats(const Conv2dGeometry& g, const Plan& s) {
  const std::size_t one = round_up_to_lines(s.k * s.ohw + kCopySlack);
  return std::max(scratch_floats(g, s), transposed_columns(s) ? 2 * one : one);
}
std::size_t partial_floats(const Conv2dGeometry& g, const Plan& s) {
  return round_up_to_lines(s.weights + g.out_channels);
}

SliceRange samples_of(const Conv2dGeometry& g, int per_task, int task) {
  return {std::min(g.batch, task * per_task), std::min(g.batch, (task + 1) * per_task)};
}

// Sum of `count` floats, with kSumLanes independent partial sums so the loop vectorizes without
// reassociating floating point behind the compiler's back.
float row_sum(const float* __restrict v, std::size_t count) {
  float lanes[kSumLanes] = {};
  std::size_t i = 0;
  for (; i + kSumLanes <= count; i += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) lanes[l] += v[i + l];
  }
  float total = 0.0f;
  for (; i < count; ++i) total += v[i];
  for (int l = 0; l < kSumLanes; ++l) total += lanes[l];
  return total;
}

void add_bias(const float* __restrict src, float bias, std::size_t count, float* __restrict dst) {
  for (std::size_t s = 0; s < count; ++s) dst[s] = src[s] + bias;
}

void add_bias_in_place(float bias, std::size_t count, float* __restrict v) {
  for (std::size_t s = 0; s < count; ++s) v[s] += bias;
}

// Forward over samples r in one GEMM, with the running thread's scratch; y: sample r.begin's
// output.
void forward_samples(const Conv2dGeometry& g, const Plan& s, SliceRange r, const float* x,
                     const float* w, const float* b, float* y, float* scratch) {
  if (r.size() == 0) return;
  const int cout = g.out_channels, k = static_cast<int>(s.k);
  float* col = scratch;
  const int samples = r.size();
  const std::size_t cols = s.ohw * samples;
  im2col_any(g, x + r.begin * s.x_sample, x + g.batch * s.x_sample, samples, col, cols);
  float* product = samples == 1 ? y : scratch + col_floats(s);  // one sample's is already NCHW
  sgemm(false, false, cout, static_cast<int>(cols), k, 1.0f, w, k, col, static_cast<int>(cols),
        0.0f, product, static_cast<int>(cols));
  if (samples == 1) {
    for (int c = 0; c < cout; ++c) add_bias_in_place(b[c], s.ohw, y + c * s.ohw);
    return;
  }
  // [Cout][n][ohw] -> [n][Cout][ohw] plus bias.
  for (int n = 0; n < samples; ++n) {
    for (int c = 0; c < cout; ++c) {
      add_bias(product + c * cols + n * s.ohw, b[c], s.ohw, y + n * s.y_sample + c * s.ohw);
    }
  }
}

// The sums of dW and db over samples r, one sample at a time, into dw and db (zero for an empty
// range); dy points at sample r.begin's output gradient.
void weight_gradient_samples(const Conv2dGeometry& g, const Plan& s, SliceRange r, const float* x,
                             const float* dy, float* dw, float* db, float* col) {
  const int cout = g.out_channels, k = static_cast<int>(s.k);
  const int ld = static_cast<int>(s.ohw);
  std::fill(db, db + cout, 0.0f);
  if (r.size() == 0) std::fill(dw, dw + s.weights, 0.0f);
  for (int n = r.begin; n < r.end; ++n) {
    const float* dyn = dy + (n - r.begin) * s.y_sample;  // one sample's dy is already [Cout x ohw]
    for (int c = 0; c < cout; ++c) db[c] += row_sum(dyn + c * s.ohw, s.ohw);
    const float beta = n == r.begin ? 0.0f : 1.0f;
    const float* xn = x + n * s.x_sample;
    if (transposed_columns(s)) {
      im2row_any(g, xn, x + g.batch * s.x_sample, col,
                 col + round_up_to_lines(s.k * s.ohw + kCopySlack));
      sgemm(false, false, cout, k, ld, 1.0f, dyn, ld, col, k, beta, dw, k);
    } else {
      im2col_any(g, xn, x + g.batch * s.x_sample, 1, col, s.ohw);
      sgemm(false, true, cout, k, ld, 1.0f, dyn, ld, col, ld, beta, dw, k);
    }
  }
}

// dx for samples r, one at a time: dcol = W^T dy, folded back by col2im.
void input_gradient_samples(const Conv2dGeometry& g, const Plan& s, SliceRange r, const float* w,
                            const float* dy, float* dx, float* dcol) {
  const int cout = g.out_channels, k = static_cast<int>(s.k);
  const int ld = static_cast<int>(s.ohw);
  for (int n = r.begin; n < r.end; ++n) {
    sgemm(true, false, k, ld, cout, 1.0f, w, k, dy + n * s.y_sample, ld, 0.0f, dcol, ld);
    col2im_any(g, dcol, 1, s.ohw, dx + n * s.x_sample);
  }
}

// dw += partial 1, + partial 2, ... in task order, for every element; spread over the weights.
void add_partials(const Conv2dGeometry& g, const Plan& s, const float* partials, float* dw,
                  float* db) {
  const std::size_t stride = partial_floats(g, s);
  const std::size_t per_range =
      round_up_to_lines(items_per_task(s.weights, kReduceFloats, kLeastReduceFloats));
  const int ranges = static_cast<int>((s.weights + per_range - 1) / per_range);
  parallel_slices(ranges + 1, [&](int i) {
    // The last task sums db.
    const bool bias = i == ranges;
    const std::size_t begin = bias ? 0 : i * per_range;
    const std::size_t end = bias ? g.out_channels : std::min(s.weights, begin + per_range);
    float* __restrict out = bias ? db : dw;
    const float* first = partials + (bias ? s.weights : 0);
    for (int p = 1; p < s.partials; ++p) {
      const float* __restrict part = first + (p - 1) * stride;
      for (std::size_t e = begin; e < end; ++e) out[e] += part[e];
    }
  });
}

// dW and db by columns (when dw is not null), and dx by the columns' tasks or by `dx_tasks` tasks
// of another path, all in one call, so that a many-core machine runs the dx tasks beside the few
// dW tasks.
void backward_by_columns(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                         float* db, float* workspace, int dx_tasks,
                         const std::function<void(int)>& dx_task, const DyOfSamples& dy_of) {
  const Plan s = plan_of(g);
  // dW task 0 sums straight into dw and db, the others into their part of the workspace.
  const auto partial_dw = [&](int i) {
    return i == 0 ? dw : workspace + (i - 1) * partial_floats(g, s);
  };
  const int partials = dw != nullptr ? s.partials : 0;
  parallel_slices(partials + dx_tasks, [&](int i) {
    if (i >= partials) return dx_task(i - partials);
    float* pdw = partial_dw(i);
    float* pdb = i == 0 ? db : pdw + s.weights;
    const SliceRange r = samples_of(g, s.partial_samples, i);
    const float* dy_first =
        dy_of && r.size() > 0 ? dy_of(r.begin, r.end) : dy + r.begin * s.y_sample;
    weight_gradient_samples(g, s, r, x, dy_first, pdw, pdb,
                            thread_scratch(backward_scratch_floats(g, s)));
  });
  if (partials > 1) add_partials(g, s, workspace, dw, db);
}

// The columns path's backward: dW and db (unless dw is null) and dx (unless null) by columns.
void backward_columns(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                      float* dx, float* dw, float* db, float* workspace, const DyOfSamples& dy_of) {
  const Plan s = plan_of(g);
  const int dx_tasks = dx != nullptr ? s.tasks : 0;
  backward_by_columns(
      g, x, dy, dw, db, workspace, dx_tasks,
      [&](int i) {
        input_gradient_samples(g, s, samples_of(g, s.task_samples, i), w, dy, dx,
                               thread_scratch(backward_scratch_floats(g, s)));
      },
      dy_of);
}

}  // namespace

// The layer's path, by its geometry: direct for stride-1 layers with few taps (conv2d_direct.hpp;
// dx by columns), Winograd for stride-1 3x3 and 5x5 layers with many input channels
// (conv2d_winograd.hpp: y, dx, dW and db in the domain; its transformed filters and partials
// follow the columns path's partials in the workspace, which a build without its lanes takes),
// else columns.
std::size_t conv2d_workspace_floats(const Conv2dGeometry& g) {
  const std::size_t columns = conv2d_columns_workspace_floats(g);
  // Sized for the Winograd path on its geometries whether or not the build takes it, so that
  // tests can run it in any build.
  if (winograd_geometry(g)) return columns + conv2d_winograd_workspace_floats(g);
  return std::max(columns, conv2d_direct_workspace_floats(g));
}

void conv2d_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                    float* y, float* workspace, const SamplesHook& done) {
  if (conv2d_direct_applies(g)) return conv2d_direct_forward(g, x, w, b, y, done);
  if (winograd_applies(g)) {
    return conv2d_winograd_forward(g, x, w, b, y, workspace + conv2d_columns_workspace_floats(g),
                                   done);
  }
  conv2d_forward_columns(g, x, w, b, y, workspace, done);
}

void conv2d_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db, float* workspace, const DyOfSamples& dy_of) {
  DL_CHECK(!dy_of || dx == nullptr,
           "a convolution's backward takes dy per task only where it computes no dx");
  if (conv2d_direct_applies(g)) {
    conv2d_direct_weight_gradient(g, x, dy, dw, db, workspace, dy_of);
    if (dx != nullptr) conv2d_backward_columns(g, x, w, dy, dx, nullptr, nullptr, workspace);
    return;
  }
  // The Winograd path's filters and partial dW follow the columns' partials.
  float* filters = workspace + conv2d_columns_workspace_floats(g);
  if (winograd_applies(g) && dw != nullptr) {
    const WinogradBackward both(g, w, dy, dx, x, filters, winograd_lanes(), dy_of);
    parallel_slices(both.tasks(), [&](int i) { both.run(i); });
    return both.finish(dw, db);
  }
  if (winograd_applies(g) && dx != nullptr) {
    const WinogradBackward winograd(g, w, dy, dx, nullptr, filters);
    return backward_by_columns(g, x, dy, dw, db, workspace, winograd.tasks(),
                               [&](int i) { winograd.run(i); }, {});
  }
  backward_columns(g, x, w, dy, dx, dw, db, workspace, dy_of);
}

std::size_t conv2d_columns_workspace_floats(const Conv2dGeometry& g) {
  const Plan s = plan_of(g);
  return partial_floats(g, s) * (s.partials - 1);
}

void conv2d_forward_columns(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                            float* y, float* /*workspace*/, const SamplesHook& done) {
  const Plan s = plan_of(g);
  parallel_slices(s.tasks, [&](int i) {
    const SliceRange r = samples_of(g, s.task_samples, i);
    float* outputs = outputs_of_samples(done, y, s.y_sample, r.begin, r.end);
    forward_samples(g, s, r, x, w, b, outputs, thread_scratch(scratch_floats(g, s)));
    call_for_samples(done, r.begin, r.end, outputs);
  });
}

void conv2d_backward_columns(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* dy, float* dx, float* dw, float* db, float* workspace) {
  backward_columns(g, x, w, dy, dx, dw, db, workspace, {});
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
