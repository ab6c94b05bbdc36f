#include "conv2d_paths.hpp"

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/conv2d_direct.hpp"
#include "backend/cpu/conv2d_winograd.hpp"
#include "backend/op_test_support.hpp"

namespace dl::testing::conv_paths {

using namespace dl::testing::conv;

namespace {

void direct_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                    float* y, float* /*workspace*/) {
  dl::cpu::conv2d_direct_forward(g, x, w, b, y);
}
// dx from the columns path, as conv2d_backward does it.
void direct_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                     float* dx, float* dw, float* db, float* workspace) {
  dl::cpu::conv2d_direct_weight_gradient(g, x, dy, dw, db, workspace);
  if (dx != nullptr) dl::cpu::conv2d_backward_columns(g, x, w, dy, dx, nullptr, nullptr, workspace);
}

// The Winograd path's y, dx, dW and db with L tiles per lane vector (its transformed filters
// after the columns' partials in the workspace), as conv2d_backward does it.
template <int L>
void winograd_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                      float* y, float* workspace) {
  dl::cpu::conv2d_winograd_forward(g, x, w, b, y,
                                   workspace + dl::cpu::conv2d_columns_workspace_floats(g), {}, L);
}
template <int L>
void winograd_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db, float* workspace) {
  const dl::cpu::WinogradBackward winograd(
      g, w, dy, dx, x, workspace + dl::cpu::conv2d_columns_workspace_floats(g), L);
  for (int task = 0; task < winograd.tasks(); ++task) winograd.run(task);
  winograd.finish(dw, db);
}
// Its geometries, in builds that compile L lanes (8 in all, 16 with AVX-512).
template <int L>
bool winograd_takes(const Conv2dGeometry& g) {
  return dl::cpu::winograd_lanes_built(L) && dl::cpu::winograd_geometry(g);
}

// The entry points without their per-task hooks (samples_hook.hpp), as Path's signatures.
void dispatched_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                        float* y, float* workspace) {
  dl::cpu::conv2d_forward(g, x, w, b, y, workspace);
}
void dispatched_backward(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                         float* dx, float* dw, float* db, float* workspace) {
  dl::cpu::conv2d_backward(g, x, w, dy, dx, dw, db, workspace);
}
void columns_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                     float* y, float* workspace) {
  dl::cpu::conv2d_forward_columns(g, x, w, b, y, workspace);
}

bool any_geometry(const Conv2dGeometry&) {
  return true;
}
bool stride_one(const Conv2dGeometry& g) {
  return g.stride_height == 1 && g.stride_width == 1;
}

}  // namespace

Problem random_problem(const Conv2dGeometry& g, std::mt19937& rng) {
  return {g, random_values(x_size(g), rng), random_values(w_size(g), rng),
          random_values(g.out_channels, rng), random_values(y_size(g), rng)};
}

const Path kPaths[kPathCount] = {
    {"as dispatched", dispatched_forward, dispatched_backward, any_geometry},
    {"columns", columns_forward, dl::cpu::conv2d_backward_columns, any_geometry},
    {"direct", direct_forward, direct_backward, stride_one},
    {"winograd, 16 lanes", winograd_forward<16>, winograd_backward<16>, winograd_takes<16>},
    {"winograd, 8 lanes", winograd_forward<8>, winograd_backward<8>, winograd_takes<8>},
};
bool takes(const Path& path, const Conv2dGeometry& g) {
  return path.takes(g);
}

std::vector<Conv2dGeometry> geometries() {
  return {
      truncate_geometry({2, 1, 28, 28, 20, 5, 5}),           // LeNet's first layer
      truncate_geometry({2, 20, 12, 12, 50, 5, 5}),          // LeNet's second layer
      truncate_geometry({19, 20, 12, 12, 50, 5, 5}),         // a batch of several chunks
      truncate_geometry({2, 3, 7, 6, 4, 3, 3}, 1, 1),        // padding 1
      truncate_geometry({2, 3, 9, 8, 5, 3, 3, 2, 2}),        // stride 2
      truncate_geometry({2, 2, 8, 9, 3, 2, 5, 1, 2}, 1, 2),  // non-square kernel and stride
      truncate_geometry({1, 2, 5, 5, 3, 3, 3}, 2, 2),        // padding wider than half kernel
      same_geometry({2, 3, 7, 8, 4, 4, 3, 2, 2}),            // Same: asymmetric padding
      same_geometry({2, 2, 5, 6, 3, 2, 2}),                  // Same, even kernel, stride 1
      same_geometry({1, 2, 9, 7, 2, 5, 4, 3, 2}),            // Same, stride 3x2
      truncate_geometry({3, 4, 6, 6, 2, 1, 1}),              // 1x1 kernel
      // Weights large enough for multi-sample chunks in backward when BLAS is threaded.
      truncate_geometry({5, 16, 6, 6, 32, 3, 3}, 1, 1),
      truncate_geometry({3, 16, 9, 9, 32, 3, 3, 2, 2}, 1, 1),
      // The direct path: a batch that ends inside a task and a channel count that ends inside
      // a register block; padding and a non-square kernel over 11 x 13 outputs (the last
      // vector of positions partial); rows narrower than a vector; one output channel; small
      // planes.
      truncate_geometry({19, 1, 28, 28, 13, 5, 5}),
      truncate_geometry({3, 2, 11, 13, 7, 3, 5}, 1, 2),
      truncate_geometry({2, 3, 5, 4, 6, 2, 3}),
      truncate_geometry({1, 1, 17, 40, 1, 3, 7}, 2, 3),
      truncate_geometry({19, 2, 6, 7, 5, 3, 3}, 1, 1),  // dW in groups of 13 samples, then 6
      // The Winograd path (conv2d_winograd.hpp): tiles cut by the plane's edge (odd outputs),
      // padding, channel counts that leave remainders in the products' register blocks, batches
      // that end inside a task, and planes wider than one run of tiles.
      same_geometry({3, 8, 9, 7, 6, 5, 5}),
      truncate_geometry({5, 12, 6, 7, 13, 3, 3}),
      same_geometry({2, 9, 33, 20, 4, 3, 3}),
      truncate_geometry({7, 10, 13, 11, 3, 5, 5}, 1, 2),
      // Its row transforms (conv2d_winograd_rows.hpp), 4 x 4 tiles: padding 1 on planes 32 wide
      // (two tile rows per group of 16 lanes, one with 8), 16 wide with an odd height (four, or
      // two) and 8 wide (eight, half a vector each, or four) on 6 rows, where groups straddle
      // samples and the batch ends inside one.
      same_geometry({2, 8, 32, 32, 4, 3, 3}),
      same_geometry({3, 8, 7, 16, 5, 3, 3}),
      same_geometry({5, 9, 6, 8, 6, 3, 3}),
  };
}

}  // namespace dl::testing::conv_paths
