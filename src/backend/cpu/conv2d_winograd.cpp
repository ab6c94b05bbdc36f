#include "backend/cpu/conv2d_winograd.hpp"

#include <algorithm>

#include "backend/cpu/conv2d_winograd_products.hpp"
#include "backend/cpu/conv2d_winograd_rows.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"
#include "backend/cpu/conv2d_winograd_weights.hpp"
#include "backend/cpu/thread_pool.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using namespace winograd;

// Below this many input channels the forward products (K = in_channels) are too short to pay for
// the transforms: LeNet's first layer (1 channel) stays on the columns path.
constexpr int kWinogradMinChannels = 8;
// Tiles per task, at least: four vectors of 16 lanes, the products' register block with 16 lanes
// (LeNet's second layer: 4 samples of 16 tiles, 32 tasks at batch 128). With 8 lanes, 32 and 128
// tiles were slower (forward 2,097 and 2,237 us against 2,008, LeNet's second layer).
constexpr int kTaskTiles = 64;
// Tiles per task, at least, where the backward pass sums dW too: its products add each sum's
// lanes once per task (conv2d_winograd_weights.hpp), so each lane needs 16 multiply-adds
// between two such additions to keep them near a tenth of the products; but the task's dM and
// V, positions x channels x tiles floats, should stay within kWeightTaskBytes of the core's
// L2 cache, down to kLeastWeightTaskTiles. ResNet-20's 3x3 layers at batch 128 in F(2, 3)'s
// tiles (one thread, backward, us): 1 sample per task on 32x32 planes; 4 on 16x16 (5,119 with
// 2); 8 on 8x8 with 64 channels (4,331; 4,687 with 16 samples, whose 2 MB left the cache). In
// F(4, 3)'s (64, 16 and 4 tiles per sample): 4, 8 and 32 samples; on 32x32, 2 samples (half the
// bytes) measured the same within a busy machine's noise (backward 8,218 to 8,611 against 8,328
// to 8,657). dx does not depend on the tasks' size.
constexpr int kWeightTaskTiles = 256;
constexpr int kLeastWeightTaskTiles = 128;
constexpr std::size_t kWeightTaskBytes = std::size_t{1} << 20;
// Filter pairs' lane groups transformed per task; fewer where the threads are many
// (items_per_task: each group is transformed alone).
constexpr int kFilterGroupsPerTask = 4;
// Floats of dU each task of the partials' sum adds up; fewer where the threads are many
// (items_per_task: each float is summed by one task), down to kLeastReduceFloats.
constexpr std::size_t kReduceFloats = 4096;
constexpr std::size_t kLeastReduceFloats = 512;
// A pass is spread (TaskSpread::kByThreads) where its chunks, handed out to the threads in
// rounds, would leave more than a quarter of the threads' rounds idle: ResNet-20's 64-channel
// layers make 4 backward chunks and 8 forward ones at batch 128, which idled 12 and 8 of a
// 16-thread worker's threads through a sixth of its step (bench/task_scaling.py). Where the
// chunks fill the rounds (4 chunks on 2 threads), spreading them would only cost.
constexpr double kLeastBusyRounds = 0.75;
// The fewest tiles of a spread task: one vector of 16 lanes.
constexpr int kLeastRunTiles = 16;
// Filter pairs per task of dW's transform back from the Winograd domain: a few microseconds of
// work each. parallel_ranges would run ResNet-20's 256 to 4,096 pairs on one thread, a serial
// stretch after every layer's backward pass that bench/task_scaling.py showed idling 15 threads.
// Fewer where the threads are many (items_per_task), down to kLeastPairsPerTask.
constexpr int kPairsPerTask = 64;
constexpr int kLeastPairsPerTask = 8;
// Partial sums kept side by side in db's plane sums.
constexpr int kSumLanes = 16;

struct Plan {
  int lanes = 0;
  int positions = 0;      // n^2
  std::size_t pairs = 0;  // out_channels * in_channels: U[p] is pairs floats
  int task_samples = 1;
  int tasks = 1;
  std::size_t tiles = 0;  // lane-padded tiles of a task's chunk
};

Plan plan_of(const Conv2dGeometry& g, int lanes, int task_tiles = kTaskTiles) {
  Plan s;
  s.lanes = lanes;
  const int n = tile_outputs(g) + g.kernel_height - 1;
  s.positions = n * n;
  s.pairs = static_cast<std::size_t>(g.out_channels) * g.in_channels;
  const int per_sample = tiles_per_sample(g);
  s.task_samples = std::clamp((task_tiles + per_sample - 1) / per_sample, 1, std::max(g.batch, 1));
  s.tasks = task_count(g.batch, s.task_samples);
  // Whole lane vectors of tiles.
  const std::size_t tiles = static_cast<std::size_t>(s.task_samples) * per_sample;
  s.tiles = (tiles + lanes - 1) / lanes * lanes;
  return s;
}

int weight_task_tiles(const Conv2dGeometry& g) {
  const int n = tile_outputs(g) + g.kernel_height - 1;
  const std::size_t per_tile =
      static_cast<std::size_t>(n) * n * (g.in_channels + g.out_channels) * sizeof(float);
  const int fitting = static_cast<int>(kWeightTaskBytes / std::max<std::size_t>(per_tile, 1));
  return std::clamp(fitting, kLeastWeightTaskTiles, kWeightTaskTiles);
}

bool spreads(TaskSpread spread, int tasks) {
  if (spread != TaskSpread::kByThreads) return spread == TaskSpread::kAlways;
  const int threads = parallel_width();
  const int rounds = (tasks + threads - 1) / threads;
  return tasks < kLeastBusyRounds * rounds * threads;
}

Chunk chunk_of(const Conv2dGeometry& g, const Plan& s, int task) {
  const int begin = std::min(g.batch, task * s.task_samples);
  const int end = std::min(g.batch, begin + s.task_samples);
  return {begin, end - begin, s.tiles, s.lanes};
}

// U = G w Gt for every (out, in) channel pair, in lane groups.
void transform_filters(const Conv2dGeometry& g, const Plan& s, const float* w, float* u) {
  const std::size_t groups = (s.pairs + s.lanes - 1) / s.lanes;
  parallel_item_ranges(groups, kFilterGroupsPerTask, 1, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t group = begin; group < end; ++group)
      filters_to_domain(g, s.lanes, w, group * s.lanes, u);
  });
}

// One task's part of dU (positions x pairs) and of db (out_channels), in the workspace after U.
std::size_t partial_floats(const Plan& s, int out_channels) {
  return round_up_to_lines(s.positions * s.pairs + out_channels);
}
std::size_t filters_floats(const Plan& s) {
  return round_up_to_lines(s.positions * s.pairs);
}

// Where dU's products are spread (TaskSpread), each task's chunk is cut into runs of whole
// lane vectors of tiles, each moved into the domain by a task of its own, into the workspace
// after the partial sums: dM, then V (positions x channels x tiles each).
struct Runs {
  int samples = 1;         // per run (the chunk's last run may have fewer)
  int per_task = 1;        // runs per chunk
  std::size_t tiles = 0;   // per run, whole lane vectors
  std::size_t floats = 0;  // a run's dM and V, whole lines
};
Runs runs_of(const Conv2dGeometry& g, const Plan& s) {
  const int per_sample = tiles_per_sample(g);
  Runs r;
  r.samples = s.task_samples;  // one run, where no fewer samples fill whole vectors
  // The tiles' path adds dx's overlapping windows in another order near a chunk's end than
  // inside it, so its dx depends on where chunks end; the rows' path adds per sample alone.
  const bool dx_cut_anywhere = rows_apply(g, s.lanes);
  for (int d = 1; dx_cut_anywhere && d < s.task_samples; ++d) {
    const int tiles = d * per_sample;
    if (s.task_samples % d == 0 && tiles % s.lanes == 0 && tiles >= kLeastRunTiles) {
      r.samples = d;
      break;
    }
  }
  r.per_task = s.task_samples / r.samples;
  r.tiles = (static_cast<std::size_t>(r.samples) * per_sample + s.lanes - 1) / s.lanes * s.lanes;
  r.floats = round_up_to_lines(s.positions * (domain_stride(g.in_channels, r.tiles) +
                                              domain_stride(g.out_channels, r.tiles)));
  return r;
}

// out[c] = the sum over `samples` samples of channel c's plane of dy, in a fixed order.
void plane_sums(const float* dy, int samples, int channels, std::size_t plane, float* out) {
  for (int c = 0; c < channels; ++c) {
    float lanes[kSumLanes] = {};
    float tail = 0.0f;
    for (int n = 0; n < samples; ++n) {
      const float* v = dy + (static_cast<std::size_t>(n) * channels + c) * plane;
      std::size_t i = 0;
      for (; i + kSumLanes <= plane; i += kSumLanes)
        for (int l = 0; l < kSumLanes; ++l) lanes[l] += v[i + l];
      for (; i < plane; ++i) tail += v[i];
    }
    for (int l = 0; l < kSumLanes; ++l) tail += lanes[l];
    out[c] = tail;
  }
}

}  // namespace

bool winograd_applies(const Conv2dGeometry& g) {
  return kTakenLanes > 0 && winograd_geometry(g);
}

int winograd_lanes() {
  return kTakenLanes > 0 ? kTakenLanes : kWidestLanes;
}

bool winograd_lanes_built(int lanes) {
  return lanes == 8 || lanes == kWidestLanes;
}

bool winograd_geometry(const Conv2dGeometry& g) {
  return g.stride_height == 1 && g.stride_width == 1 && g.kernel_height == g.kernel_width &&
         has_transform(g.kernel_height) && g.in_channels >= kWinogradMinChannels &&
         g.out_height >= 1 && g.out_width >= 1;
}

std::size_t conv2d_winograd_workspace_floats(const Conv2dGeometry& g) {
  const Plan s = plan_of(g, kWidestLanes, weight_task_tiles(g));
  // The spread products' runs, for either lane width (8 lanes may cut finer runs).
  std::size_t runs = 0;
  for (int lanes : {8, kWidestLanes}) {
    const Plan p = plan_of(g, lanes, weight_task_tiles(g));
    const Runs r = runs_of(g, p);
    runs = std::max(runs, static_cast<std::size_t>(p.tasks) * r.per_task * r.floats);
  }
  return filters_floats(s) + s.tasks * partial_floats(s, g.out_channels) + runs;
}

void conv2d_winograd_forward(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* b, float* y, float* workspace, const SamplesHook& done,
                             int lanes, TaskSpread spread) {
  Plan s = plan_of(g, lanes);
  if (spreads(spread, s.tasks)) s = plan_of(g, lanes, kLeastRunTiles);
  float* u = workspace;
  transform_filters(g, s, w, u);
  const int cin = g.in_channels, cout = g.out_channels;
  const std::size_t v_stride = domain_stride(cin, s.tiles), m_stride = domain_stride(cout, s.tiles);
  const std::size_t v_floats = s.positions * v_stride;
  parallel_slices(s.tasks, [&](int task) {
    const Chunk chunk = chunk_of(g, s, task);
    float* v = thread_scratch(v_floats + s.positions * m_stride);
    float* m = v + v_floats;
    inputs_to_domain(g, chunk, x, v);
    for (int p = 0; p < s.positions; ++p) {
      lanes_product(s.lanes, cout, cin, u + p * s.pairs, cin, 1, v + p * v_stride, m + p * m_stride,
                    s.tiles);
    }
    const int end = chunk.first_sample + chunk.samples;
    float* outputs =
        outputs_of_samples(done, y, ops::conv_output_per_sample(g), chunk.first_sample, end);
    outputs_from_domain(g, chunk, m, b, outputs);
    call_for_samples(done, chunk.first_sample, end, outputs);
  });
}

WinogradBackward::WinogradBackward(const Conv2dGeometry& g, const float* w, const float* dy,
                                   float* dx, const float* x, float* workspace, int lanes,
                                   const DyOfSamples& dy_of, TaskSpread spread)
    : g_(g), dy_(dy), dx_(dx), x_(x), u_(workspace), lanes_(lanes), dy_of_(dy_of) {
  if (dx != nullptr) transform_filters(g, plan_of(g, lanes), w, workspace);
  const Plan s = plan_of(g, lanes, weight_task_tiles(g));
  // dy_of hands out each task's dy once; the spread products would need it twice (dM, db).
  spread_ = x != nullptr && !dy_of && spreads(spread, s.tasks);
  domains_ = workspace + filters_floats(s) + s.tasks * partial_floats(s, g.out_channels);
}

int WinogradBackward::tasks() const {
  if (spread_) {
    const Plan s = plan_of(g_, lanes_, weight_task_tiles(g_));
    return s.tasks * runs_of(g_, s).per_task;
  }
  return plan_of(g_, lanes_, x_ != nullptr ? weight_task_tiles(g_) : kTaskTiles).tasks;
}

const float* WinogradBackward::to_domain(const Chunk& chunk, float* dm, float* dv, float* v) const {
  const int cin = g_.in_channels, cout = g_.out_channels;
  const int positions = plan_of(g_, lanes_).positions;
  const std::size_t pairs = static_cast<std::size_t>(cin) * cout;
  // The chunk's dy as a batch of its own, where dy_of makes it for this task.
  const std::size_t y_sample = ops::conv_output_per_sample(g_);
  const int end = chunk.first_sample + chunk.samples;
  const float* dy = dy_of_ ? dy_of_(chunk.first_sample, end) : dy_ + chunk.first_sample * y_sample;
  Conv2dGeometry chunk_g = g_;
  chunk_g.batch = chunk.samples;
  output_gradients_to_domain(chunk_g, Chunk{0, chunk.samples, chunk.tiles, chunk.lanes}, dy, dm);
  if (dx_ != nullptr) {
    for (int p = 0; p < positions; ++p) {
      // dV[p] = U[p]t dM[p]: U[p] read with its strides swapped.
      lanes_product(chunk.lanes, cin, cout, u_ + p * pairs, 1, cin,
                    dm + p * domain_stride(cout, chunk.tiles),
                    dv + p * domain_stride(cin, chunk.tiles), chunk.tiles);
    }
    input_gradients_from_domain(g_, chunk, dv, dx_);
  }
  if (x_ != nullptr) inputs_to_domain(g_, chunk, x_, v);
  return dy;
}

void WinogradBackward::run(int task) const {
  if (spread_) return run_spread(task);
  const Plan s = plan_of(g_, lanes_, x_ != nullptr ? weight_task_tiles(g_) : kTaskTiles);
  const int cin = g_.in_channels, cout = g_.out_channels;
  const std::size_t dm_stride = domain_stride(cout, s.tiles),
                    v_stride = domain_stride(cin, s.tiles);
  const std::size_t dm_floats = s.positions * dm_stride;
  const Chunk chunk = chunk_of(g_, s, task);
  // V takes dV's place once dx is done.
  float* dm = thread_scratch(dm_floats + s.positions * v_stride);
  float* v = dm + dm_floats;
  const float* dy = to_domain(chunk, dm, v, v);
  if (x_ == nullptr) return;
  // dU[p] = the sum over the chunk's tiles of dM[p] V[p]t; db beside it.
  float* part = u_ + filters_floats(s) + task * partial_floats(s, cout);
  for (int p = 0; p < s.positions; ++p) {
    lanes_weight_product(s.lanes, cout, cin, dm + p * dm_stride, v + p * v_stride,
                         TileRuns{s.tiles, 1, 0}, part + p * s.pairs);
  }
  const std::size_t plane = static_cast<std::size_t>(g_.out_height) * g_.out_width;
  plane_sums(dy, chunk.samples, cout, plane, part + s.positions * s.pairs);
}

void WinogradBackward::run_spread(int i) const {
  const Plan s = plan_of(g_, lanes_, weight_task_tiles(g_));
  const Runs r = runs_of(g_, s);
  const int task = i / r.per_task;
  const int first = task * s.task_samples + (i % r.per_task) * r.samples;
  const int end = std::min({g_.batch, (task + 1) * s.task_samples, first + r.samples});
  if (first >= end) return;  // the last chunk's runs past its samples
  // dM and V kept in the workspace for spread_products; dV in the thread's scratch.
  float* dm = domains_ + static_cast<std::size_t>(i) * r.floats;
  float* dv = thread_scratch(s.positions * domain_stride(g_.in_channels, r.tiles));
  to_domain(Chunk{first, end - first, r.tiles, s.lanes}, dm, dv,
            dm + s.positions * domain_stride(g_.out_channels, r.tiles));
}

void WinogradBackward::spread_products() const {
  const Plan s = plan_of(g_, lanes_, weight_task_tiles(g_));
  const Runs r = runs_of(g_, s);
  const int cin = g_.in_channels, cout = g_.out_channels;
  const std::size_t plane = static_cast<std::size_t>(g_.out_height) * g_.out_width;
  // One task per chunk and position, and one per chunk for db: the sums of the tasks that kept
  // their products, over the chunk's runs in order (TileRuns), so the same bits.
  parallel_slices(s.tasks * (s.positions + 1), [&](int i) {
    const int task = i / (s.positions + 1), p = i % (s.positions + 1);
    const int first = task * s.task_samples;
    const int samples = std::min(g_.batch, first + s.task_samples) - first;
    float* part = u_ + filters_floats(s) + task * partial_floats(s, cout);
    if (p == s.positions) {
      const float* dy = dy_ + first * ops::conv_output_per_sample(g_);
      return plane_sums(dy, samples, cout, plane, part + s.positions * s.pairs);
    }
    const float* dm = domains_ + static_cast<std::size_t>(task) * r.per_task * r.floats;
    const std::size_t dm_stride = domain_stride(cout, r.tiles);
    const float* v = dm + s.positions * dm_stride;
    const TileRuns runs{r.tiles, (samples + r.samples - 1) / r.samples, r.floats};
    lanes_weight_product(s.lanes, cout, cin, dm + p * dm_stride,
                         v + p * domain_stride(cin, r.tiles), runs, part + p * s.pairs);
  });
}

void WinogradBackward::finish(float* dw, float* db) const {
  const Plan s = plan_of(g_, lanes_, weight_task_tiles(g_));
  if (spread_) spread_products();
  const std::size_t stride = partial_floats(s, g_.out_channels);
  float* first = u_ + filters_floats(s);
  const std::size_t du_floats = s.positions * s.pairs;
  // The tasks' parts added in task order, element by element, into the first.
  const std::size_t sums = du_floats + g_.out_channels;
  parallel_item_ranges(sums, kReduceFloats, kLeastReduceFloats, kLineFloats,
                       [&](std::size_t begin, std::size_t end) {
                         for (int t = 1; t < s.tasks; ++t) {
                           const float* __restrict part = first + t * stride;
                           for (std::size_t e = begin; e < end; ++e) first[e] += part[e];
                         }
                       });
  std::copy(first + du_floats, first + du_floats + g_.out_channels, db);
  // dW = Gt dU G for each filter pair.
  by_tile(g_, [&](auto m, auto r) {
    constexpr int M = decltype(m)::value, R = decltype(r)::value, n = M + R - 1;
    parallel_item_ranges(s.pairs, kPairsPerTask, kLeastPairsPerTask, 1,
                         [&](std::size_t begin, std::size_t end) {
                           for (std::size_t pair = begin; pair < end; ++pair) {
                             float du[n * n], out[R * R];
                             for (int p = 0; p < n * n; ++p) du[p] = first[p * s.pairs + pair];
                             filter_transform_adjoint<M, R>(du, out);
                             std::copy(out, out + R * R, dw + pair * R * R);
                           }
                         });
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
