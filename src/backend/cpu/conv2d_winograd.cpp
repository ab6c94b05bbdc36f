#include "backend/cpu/conv2d_winograd.hpp"

#include <algorithm>

#include "backend/cpu/conv2d_winograd_products.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"
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
// Filter pairs' lane groups transformed per task.
constexpr int kFilterGroupsPerTask = 4;

struct Plan {
  int lanes = 0;
  int positions = 0;      // n^2
  std::size_t pairs = 0;  // out_channels * in_channels: U[p] is pairs floats
  int task_samples = 1;
  int tasks = 1;
  std::size_t tiles = 0;  // lane-padded tiles of a task's chunk
};

Plan plan_of(const Conv2dGeometry& g, int lanes) {
  Plan s;
  s.lanes = lanes;
  const int n = kTileOutputs + g.kernel_height - 1;
  s.positions = n * n;
  s.pairs = static_cast<std::size_t>(g.out_channels) * g.in_channels;
  const int per_sample = tiles_per_sample(g);
  s.task_samples = std::clamp((kTaskTiles + per_sample - 1) / per_sample, 1, std::max(g.batch, 1));
  s.tasks = task_count(g.batch, s.task_samples);
  // Whole lane vectors of tiles.
  const std::size_t tiles = static_cast<std::size_t>(s.task_samples) * per_sample;
  s.tiles = (tiles + lanes - 1) / lanes * lanes;
  return s;
}

Chunk chunk_of(const Conv2dGeometry& g, const Plan& s, int task) {
  const int begin = std::min(g.batch, task * s.task_samples);
  const int end = std::min(g.batch, begin + s.task_samples);
  return {begin, end - begin, s.tiles, s.lanes};
}

// U = G w Gt for every (out, in) channel pair, in lane groups.
void transform_filters(const Conv2dGeometry& g, const Plan& s, const float* w, float* u) {
  const int groups = static_cast<int>((s.pairs + s.lanes - 1) / s.lanes);
  parallel_slices(task_count(groups, kFilterGroupsPerTask), [&](int task) {
    const int end = std::min(groups, (task + 1) * kFilterGroupsPerTask);
    for (int group = task * kFilterGroupsPerTask; group < end; ++group) {
      filters_to_domain(g, s.lanes, w, static_cast<std::size_t>(group) * s.lanes, u);
    }
  });
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
  const Plan s = plan_of(g, kWidestLanes);
  return round_up_to_lines(s.positions * s.pairs);
}

void conv2d_winograd_forward(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* b, float* y, float* workspace, const SamplesHook& done,
                             int lanes) {
  const Plan s = plan_of(g, lanes);
  float* u = workspace;
  transform_filters(g, s, w, u);
  const int cin = g.in_channels, cout = g.out_channels;
  const std::size_t v_floats = s.positions * cin * s.tiles;
  parallel_slices(s.tasks, [&](int task) {
    const Chunk chunk = chunk_of(g, s, task);
    float* v = thread_scratch(v_floats + s.positions * cout * s.tiles);
    float* m = v + v_floats;
    inputs_to_domain(g, chunk, x, v);
    for (int p = 0; p < s.positions; ++p) {
      lanes_product(s.lanes, cout, cin, u + p * s.pairs, cin, 1, v + p * cin * s.tiles,
                    m + p * cout * s.tiles, s.tiles);
    }
    const int end = chunk.first_sample + chunk.samples;
    float* outputs =
        outputs_of_samples(done, y, ops::conv_output_per_sample(g), chunk.first_sample, end);
    outputs_from_domain(g, chunk, m, b, outputs);
    call_for_samples(done, chunk.first_sample, end, outputs);
  });
}

WinogradInputGradient::WinogradInputGradient(const Conv2dGeometry& g, const float* w,
                                             const float* dy, float* dx, float* workspace,
                                             int lanes)
    : g_(g), dy_(dy), dx_(dx), u_(workspace), lanes_(lanes) {
  transform_filters(g, plan_of(g, lanes), w, workspace);
}

int WinogradInputGradient::tasks() const {
  return plan_of(g_, lanes_).tasks;
}

void WinogradInputGradient::run(int task) const {
  const Plan s = plan_of(g_, lanes_);
  const int cin = g_.in_channels, cout = g_.out_channels;
  const std::size_t dm_floats = s.positions * cout * s.tiles;
  const Chunk chunk = chunk_of(g_, s, task);
  float* dm = thread_scratch(dm_floats + s.positions * cin * s.tiles);
  float* dv = dm + dm_floats;
  output_gradients_to_domain(g_, chunk, dy_, dm);
  for (int p = 0; p < s.positions; ++p) {
    // dV[p] = U[p]t dM[p]: U[p] read with its strides swapped.
    lanes_product(s.lanes, cin, cout, u_ + p * s.pairs, 1, cin, dm + p * cout * s.tiles,
                  dv + p * cin * s.tiles, s.tiles);
  }
  input_gradients_from_domain(g_, chunk, dv, dx_);
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
