// The CPU convolution against a direct (seven nested loops) convolution, and against finite
// differences of a scalar loss: conv2d_forward and conv2d_backward as the backend calls them,
// the columns path on every geometry, the direct path (conv2d_direct.hpp) on every stride-1
// geometry and the Winograd path (conv2d_winograd.hpp) where it applies, whichever the build
// dispatches to.
#include <sys/mman.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/conv2d_direct.hpp"
#include "backend/cpu/conv2d_winograd.hpp"
#include "backend/cpu/conv2d_winograd_rows.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"
#include "backend/gradient_check.hpp"
#include "backend/op_test_support.hpp"

namespace {

using dl::testing::check_close;
using dl::testing::Guarded;

using dl::Conv2dGeometry;

// Float sums of a few hundred products against a double reference.
constexpr double kTolerance = 1e-4;
constexpr unsigned kSeed = 20240601;

using namespace dl::testing::conv;

struct Problem {
  Conv2dGeometry g;
  std::vector<float> x, w, b, dy;
};

Problem random_problem(const Conv2dGeometry& g, std::mt19937& rng) {
  return {g, random_values(x_size(g), rng), random_values(w_size(g), rng),
          random_values(g.out_channels, rng), random_values(y_size(g), rng)};
}

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
  const dl::cpu::WinogradBackward winograd(g, w, dy, dx, x,
                                           workspace + dl::cpu::conv2d_columns_workspace_floats(g),
                                           L);
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

struct Path {
  const char* name;
  void (*forward)(const Conv2dGeometry& g, const float* x, const float* w, const float* b, float* y,
                  float* workspace);
  void (*backward)(const Conv2dGeometry& g, const float* x, const float* w, const float* dy,
                   float* dx, float* dw, float* db, float* workspace);
  bool (*takes)(const Conv2dGeometry& g);
};
const Path kPaths[] = {
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

// The ops take one sample per GEMM with single-threaded BLAS and several otherwise: run the
// comparisons under both, restoring the thread count afterwards.
using dl::testing::BlasThreads;

// Floats placed so that the last one ends a page and the next page is unreadable: an op that reads
// past the end faults instead of passing unnoticed.
class EndsAtGuardPage {
 public:
  explicit EndsAtGuardPage(std::size_t floats) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t data_pages = (floats * sizeof(float) + page - 1) / page;
    bytes_ = (data_pages + 1) * page;
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base_ != MAP_FAILED);
    char* guard = static_cast<char*>(base_) + data_pages * page;
    REQUIRE(mprotect(guard, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<float*>(guard) - floats;
  }
  ~EndsAtGuardPage() { munmap(base_, bytes_); }
  EndsAtGuardPage(const EndsAtGuardPage&) = delete;
  EndsAtGuardPage& operator=(const EndsAtGuardPage&) = delete;
  float* get() { return data_; }

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  float* data_ = nullptr;
};

}  // namespace

TEST_CASE("conv2d matches a direct convolution, forward and backward", "[conv2d]") {
  const Path& path = kPaths[GENERATE(0, 1, 2, 3, 4)];
  const int threads = GENERATE(1, 2);
  INFO(path.name << ", BLAS threads " << threads);
  const BlasThreads blas(threads);
  std::mt19937 rng(kSeed);
  for (const Conv2dGeometry& g : geometries()) {
    if (!takes(path, g)) continue;
    INFO(describe(g));
    Problem p = random_problem(g, rng);
    const std::size_t ws_floats = dl::cpu::conv2d_workspace_floats(g);
    Guarded<float> ws(ws_floats), y(y_size(g)), dx(x_size(g)), dw(w_size(g)), db(g.out_channels);

    path.forward(g, p.x.data(), p.w.data(), p.b.data(), y.get(), ws.get());
    check_close("y", y.get(), reference_forward(g, p.x, p.w, p.b), kTolerance);

    path.backward(g, p.x.data(), p.w.data(), p.dy.data(), dx.get(), dw.get(), db.get(), ws.get());
    const Gradients want = reference_backward(g, p.x, p.w, p.dy);
    check_close("dx", dx.get(), want.dx, kTolerance);
    check_close("dw", dw.get(), want.dw, kTolerance);
    check_close("db", db.get(), want.db, kTolerance);
    CHECK(ws.guard_intact());
    CHECK(y.guard_intact());
    CHECK(dx.guard_intact());
    CHECK(dw.guard_intact());
    CHECK(db.guard_intact());
  }
}

TEST_CASE("conv2d: the Winograd path covers its geometries", "[conv2d]") {
  int winograd_layers = 0;
  for (const Conv2dGeometry& g : geometries()) winograd_layers += dl::cpu::winograd_geometry(g);
  // LeNet's second layer, the batch of several tasks, the 16-channel 3x3 layer, the four
  // Winograd cases and the three of its row transforms, which take them with the lanes they fit.
  CHECK(winograd_layers == 10);
  // 3x3 layers in tiles of 4 x 4 outputs, 5x5 ones in tiles of 2 x 2 (conv2d_winograd_tiles.hpp).
  CHECK(dl::cpu::winograd::tile_outputs(same_geometry({2, 8, 32, 32, 4, 3, 3})) == 4);
  CHECK(dl::cpu::winograd::tile_outputs(truncate_geometry({2, 20, 12, 12, 50, 5, 5})) == 2);
  // 64 wide: 16 tile columns, one tile row per group of 16 lanes, too many for 8.
  CHECK(dl::cpu::winograd::rows_apply(same_geometry({2, 8, 4, 64, 4, 3, 3}), 16));
  CHECK_FALSE(dl::cpu::winograd::rows_apply(same_geometry({2, 8, 4, 64, 4, 3, 3}), 8));
  CHECK_FALSE(dl::cpu::winograd::rows_apply(same_geometry({2, 8, 12, 12, 4, 3, 3}), 16));
  for (int lanes : {8, 16}) {
    CHECK(dl::cpu::winograd::rows_apply(same_geometry({2, 8, 32, 32, 4, 3, 3}), lanes));
    CHECK(dl::cpu::winograd::rows_apply(same_geometry({3, 8, 7, 16, 5, 3, 3}), lanes));
    CHECK(dl::cpu::winograd::rows_apply(same_geometry({5, 9, 6, 8, 6, 3, 3}), lanes));
    CHECK_FALSE(dl::cpu::winograd::rows_apply(same_geometry({2, 9, 33, 20, 4, 3, 3}), lanes));
    CHECK_FALSE(
        dl::cpu::winograd::rows_apply(truncate_geometry({5, 16, 6, 6, 32, 3, 3}, 1, 1), lanes));
    CHECK_FALSE(dl::cpu::winograd::rows_apply(truncate_geometry({5, 12, 6, 8, 13, 3, 3}), lanes));
  }
  CHECK_FALSE(dl::cpu::winograd_geometry(truncate_geometry({2, 3, 9, 8, 5, 3, 3, 2, 2})));
  CHECK_FALSE(dl::cpu::winograd_geometry(truncate_geometry({2, 20, 12, 12, 50, 3, 5})));
  CHECK_FALSE(dl::cpu::winograd_geometry(truncate_geometry({2, 7, 12, 12, 50, 5, 5})));
  // Builds without AVX-512 or AVX2 and FMA keep the columns path, and AVX2 builds take 8 lanes
  // (conv2d_winograd_transforms.hpp).
  CHECK(dl::cpu::winograd_applies(truncate_geometry({128, 20, 12, 12, 50, 5, 5})) ==
        (dl::cpu::winograd::kTakenLanes > 0));
  CHECK(dl::cpu::winograd_lanes() == (dl::cpu::winograd::kWidestLanes == 16 ? 16 : 8));
  CHECK(dl::cpu::winograd_lanes_built(8));
}

TEST_CASE("conv2d: the Winograd forward pass gives the same bits with 8 and 16 lanes", "[conv2d]") {
  // Each tile's transforms and products run in one lane in the same order whatever the width,
  // so AVX2 and AVX-512 builds give the same y.
  if (!dl::cpu::winograd_lanes_built(16)) return;
  std::mt19937 rng(kSeed + 5);
  for (const Conv2dGeometry& g : geometries()) {
    if (!dl::cpu::winograd_geometry(g)) continue;
    INFO(describe(g));
    const Problem p = random_problem(g, rng);
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y8(y_size(g)), y16(y_size(g));
    winograd_forward<8>(g, p.x.data(), p.w.data(), p.b.data(), y8.data(), ws.data());
    winograd_forward<16>(g, p.x.data(), p.w.data(), p.b.data(), y16.data(), ws.data());
    CHECK(y8 == y16);
  }
}

TEST_CASE("conv2d first-layer backward (no dx) gives the same dw and db", "[conv2d]") {
  const Path& path = kPaths[GENERATE(0, 1, 2, 3, 4)];
  const int threads = GENERATE(1, 2);
  INFO(path.name << ", BLAS threads " << threads);
  const BlasThreads blas(threads);
  std::mt19937 rng(kSeed + 1);
  for (const Conv2dGeometry& g : geometries()) {
    if (!takes(path, g)) continue;
    INFO(describe(g));
    Problem p = random_problem(g, rng);
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y(y_size(g));
    std::vector<float> dx(x_size(g)), dw_full(w_size(g)), db_full(g.out_channels);
    std::vector<float> dw_first(w_size(g)), db_first(g.out_channels);
    path.forward(g, p.x.data(), p.w.data(), p.b.data(), y.data(), ws.data());
    path.backward(g, p.x.data(), p.w.data(), p.dy.data(), nullptr, dw_first.data(), db_first.data(),
                  ws.data());
    path.backward(g, p.x.data(), p.w.data(), p.dy.data(), dx.data(), dw_full.data(), db_full.data(),
                  ws.data());
    CHECK(dw_first == dw_full);
    CHECK(db_first == db_full);
  }
}

TEST_CASE("conv2d reads nothing past the end of x", "[conv2d]") {
  const Path& path = kPaths[GENERATE(0, 1, 2, 3, 4)];
  const int threads = GENERATE(1, 2);
  INFO(path.name << ", BLAS threads " << threads);
  const BlasThreads blas(threads);
  std::mt19937 rng(kSeed + 4);
  for (const Conv2dGeometry& g : geometries()) {
    if (!takes(path, g)) continue;
    INFO(describe(g));
    Problem p = random_problem(g, rng);
    EndsAtGuardPage x(p.x.size());
    std::copy(p.x.begin(), p.x.end(), x.get());
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y(y_size(g));
    std::vector<float> dx(x_size(g)), dw(w_size(g)), db(g.out_channels);
    path.forward(g, x.get(), p.w.data(), p.b.data(), y.data(), ws.data());
    path.backward(g, x.get(), p.w.data(), p.dy.data(), dx.data(), dw.data(), db.data(), ws.data());
    check_close("y", y.data(), reference_forward(g, p.x, p.w, p.b), kTolerance);
  }
}

TEST_CASE("conv2d backward may run twice after one forward", "[conv2d]") {
  std::mt19937 rng(kSeed + 2);
  const Conv2dGeometry g = truncate_geometry({2, 3, 7, 6, 4, 3, 3}, 1, 1);
  Problem p = random_problem(g, rng);
  std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y(y_size(g));
  std::vector<float> dx1(x_size(g)), dw1(w_size(g)), db1(g.out_channels);
  std::vector<float> dx2(x_size(g)), dw2(w_size(g)), db2(g.out_channels);
  dl::cpu::conv2d_forward(g, p.x.data(), p.w.data(), p.b.data(), y.data(), ws.data());
  dl::cpu::conv2d_backward(g, p.x.data(), p.w.data(), p.dy.data(), dx1.data(), dw1.data(),
                           db1.data(), ws.data());
  dl::cpu::conv2d_backward(g, p.x.data(), p.w.data(), p.dy.data(), dx2.data(), dw2.data(),
                           db2.data(), ws.data());
  CHECK(dx1 == dx2);
  CHECK(dw1 == dw2);
  CHECK(db1 == db2);
}

TEST_CASE("conv2d gradients match finite differences", "[conv2d][gradient]") {
  const Path& path = kPaths[GENERATE(0, 1, 2, 3, 4)];
  INFO(path.name);
  std::mt19937 rng(kSeed + 3);
  const std::vector<Conv2dGeometry> cases = {
      truncate_geometry({2, 2, 6, 5, 3, 3, 3}),
      truncate_geometry({2, 1, 7, 9, 6, 3, 4}, 1, 2),
      truncate_geometry({2, 2, 7, 6, 2, 3, 2, 2, 1}, 1, 1),
      same_geometry({1, 2, 7, 8, 3, 4, 3, 2, 2}),
      same_geometry({1, 8, 5, 6, 2, 3, 3}),      // Winograd, 3x3
      same_geometry({2, 8, 5, 8, 2, 3, 3}),      // Winograd, 3x3, row transforms
      truncate_geometry({1, 8, 7, 6, 2, 5, 5}),  // Winograd, 5x5, cut tiles
  };
  for (const Conv2dGeometry& g : cases) {
    if (!takes(path, g)) continue;
    INFO(describe(g));
    Problem p = random_problem(g, rng);
    const std::vector<float>& r = p.dy;  // loss = sum(y * r), so dloss/dy = r
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g)), y(y_size(g));
    const auto loss = [&](const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b) {
      path.forward(g, x.data(), w.data(), b.data(), y.data(), ws.data());
      double sum = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * r[i];
      return sum;
    };
    std::vector<float> dx(x_size(g)), dw(w_size(g)), db(g.out_channels);
    loss(p.x, p.w, p.b);
    path.backward(g, p.x.data(), p.w.data(), r.data(), dx.data(), dw.data(), db.data(), ws.data());
    dl::testing::check_gradient("dx", p.x, dx,
                                [&](const std::vector<float>& v) { return loss(v, p.w, p.b); });
    dl::testing::check_gradient("dw", p.w, dw,
                                [&](const std::vector<float>& v) { return loss(p.x, v, p.b); });
    dl::testing::check_gradient("db", p.b, db,
                                [&](const std::vector<float>& v) { return loss(p.x, p.w, v); });
  }
}

TEST_CASE("conv2d gives the same bits on 1, 2, 3, 4, 8 and 16 threads", "[conv2d]") {
  std::mt19937 rng(kSeed);
  const Path& path = kPaths[GENERATE(0, 2, 4)];
  // LeNet's second layer (dispatched to the Winograd path), a first layer, and a 3x3 layer as
  // ResNet-20's (Winograd for y, dx and dW: tasks of 16 samples, the last of 5).
  const Conv2dGeometry g = GENERATE(truncate_geometry({19, 20, 12, 12, 50, 5, 5}),
                                    truncate_geometry({19, 1, 28, 28, 13, 5, 5}, 1, 0),
                                    truncate_geometry({37, 16, 8, 8, 16, 3, 3}, 1, 1));
  if (!takes(path, g)) return;
  INFO(path.name << ", " << describe(g));
  const Problem p = random_problem(g, rng);
  const auto run = [&](int threads) {
    const BlasThreads blas(threads);
    std::vector<float> ws(dl::cpu::conv2d_workspace_floats(g));
    dl::testing::LayerPass r{std::vector<float>(y_size(g)), std::vector<float>(x_size(g)),
                             std::vector<float>(w_size(g)), std::vector<float>(g.out_channels)};
    path.forward(g, p.x.data(), p.w.data(), p.b.data(), r.y.data(), ws.data());
    path.backward(g, p.x.data(), p.w.data(), p.dy.data(), r.dx.data(), r.dw.data(), r.db.data(),
                  ws.data());
    return r;
  };
  dl::testing::check_same_bits_on_any_thread_count(run);
}

TEST_CASE("conv2d takes the direct path for stride-1 layers with few taps", "[conv2d]") {
  // Builds for plain x86-64 keep the columns path (conv2d_direct_kernels.hpp).
  const bool built = dl::cpu::conv2d_direct_pays();
  CHECK(dl::cpu::conv2d_direct_applies(truncate_geometry({128, 1, 28, 28, 20, 5, 5})) == built);
  CHECK(dl::cpu::conv2d_direct_applies(truncate_geometry({3, 2, 11, 13, 7, 3, 5}, 1, 2)) == built);
  CHECK_FALSE(dl::cpu::conv2d_direct_applies(truncate_geometry({128, 20, 12, 12, 50, 5, 5})));
  CHECK_FALSE(dl::cpu::conv2d_direct_applies(truncate_geometry({2, 3, 9, 8, 5, 3, 3, 2, 2})));
}
