// The CPU convolution against a direct (seven nested loops) convolution: conv2d_forward and
// conv2d_backward as the backend calls them, the columns path on every geometry, the direct path
// (conv2d_direct.hpp) on every stride-1 geometry and the Winograd path (conv2d_winograd.hpp)
// where it applies, whichever the build dispatches to (the paths: conv2d_paths.hpp). Finite
// differences and thread counts: test_conv2d_gradients.cpp.
#include <sys/mman.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstddef>
#include <random>
#include <vector>

#include "backend/conv2d_reference.hpp"
#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/conv2d.hpp"
#include "backend/cpu/conv2d_winograd.hpp"
#include "backend/cpu/conv2d_winograd_rows.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"
#include "backend/op_test_support.hpp"
#include "conv2d_paths.hpp"

namespace {

using dl::testing::check_close;
using dl::testing::Guarded;

using dl::Conv2dGeometry;

// Float sums of a few hundred products against a double reference.
constexpr double kTolerance = 1e-4;

using namespace dl::testing::conv;
using namespace dl::testing::conv_paths;

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
    kPaths[kWinograd8].forward(g, p.x.data(), p.w.data(), p.b.data(), y8.data(), ws.data());
    kPaths[kWinograd16].forward(g, p.x.data(), p.w.data(), p.b.data(), y16.data(), ws.data());
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
