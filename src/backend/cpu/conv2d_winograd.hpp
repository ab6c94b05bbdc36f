// The CPU convolution's forward pass and input gradient in the Winograd domain, for stride-1
// layers with 3x3 or 5x5 filters and enough input channels (winograd_applies). Each output tile
// of m x m comes from an input tile of n x n (n = m + r - 1) with n^2 multiplications per
// channel pair instead of m^2 r^2: F(2x2, 5x5) for 5x5 filters, 2.8x fewer, and F(4x4, 3x3) for
// 3x3, 4x fewer (conv2d_winograd_transforms.hpp). Per chunk of samples:
//   forward  V = Bt d Btt per input tile and channel; M[p] = U[p] V[p] for each of the n^2
//            positions p (U = G w Gt, the filters transformed once per call); y = At M Att
//   dx       dM = Att dY At; dV[p] = U[p]t dM[p]; dx = the sum over tiles of Btt dV Bt
//   dW       dU[p] = the sum over tiles of dM[p] V[p]t; dw = Gt dU G. The tiles are the lanes,
//            so each sum keeps its lanes apart over a task's 128 tiles or more and adds them
//            once (conv2d_winograd_weights.hpp); an earlier prototype lost more to the sums
//            across lanes than it saved (docs/ARCHITECTURE.md).
// y and dx stay near 1e-5 relative to a double reference (LeNet's second layer at batch 128), and
// near 2e-6 on ResNet-20's 3x3 layers; dW within 2e-6 of its largest value on LeNet's second
// layer (1.7e-6, where the columns path's order gives 2e-7).
// Results are the same on any thread count (tasks fixed by the layer's size, no shared sums).
#pragma once

#include <cstddef>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/samples_hook.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Stride 1, square 3x3 or 5x5 filters, at least kWinogradMinChannels input channels: the layers
// the path computes (tests run it on them in any build).
bool winograd_geometry(const Conv2dGeometry& g);
// The layers conv2d.cpp sends this way: winograd_geometry in a build with AVX-512 or AVX2 and FMA
// vectors (kTakenLanes in conv2d_winograd_transforms.hpp).
bool winograd_applies(const Conv2dGeometry& g);
// The tiles transformed together (one per vector lane) where winograd_applies: 16 in AVX-512
// builds, 8 in others. 8 lanes are compiled in every build and 16 in AVX-512 builds, so that tests
// run both widths where they can.
int winograd_lanes();
bool winograd_lanes_built(int lanes);

// The transformed filters, which forward and dx each compute into the workspace.
std::size_t conv2d_winograd_workspace_floats(const Conv2dGeometry& g);
// Whether a pass cuts its work finer than its cache-sized chunks, for more tasks than threads:
// by the thread count (kByThreads), or always or never (tests compare the two: the same bits).
enum class TaskSpread { kByThreads, kNever, kAlways };

// `done` is called on each task's samples once their y is complete. Spread, the tasks take 16
// tiles instead of 64 (each tile's y is computed alone, so their bits are the same).
void conv2d_winograd_forward(const Conv2dGeometry& g, const float* x, const float* w,
                             const float* b, float* y, float* workspace,
                             const SamplesHook& done = {}, int lanes = winograd_lanes(),
                             TaskSpread spread = TaskSpread::kByThreads);

// The backward pass as tasks (conv2d.cpp runs them). With dx, each task writes its samples' dx
// (constructing the object transforms the filters into the workspace, over the threads). With
// x, each task also sums its samples' part of the weight gradient in the domain, dU[p] = the
// sum over their tiles of dM[p] V[p]t (V recomputed from x), and of db, into the workspace after
// the filters; finish adds the parts up in task order and makes dW = Gt dU G. With dy_of, each
// task takes its samples' dy from it (samples_hook.hpp).
// Where a layer's chunks would leave threads idle (kByThreads: over a quarter of their rounds), the
// pass is spread (kAlways): the tasks move runs of a few samples into the domain (dM, dx, V),
// keeping dM and V in the workspace, and finish sums dU as tasks of its own, one per chunk and
// position (and db per chunk). More tasks for a server's cores, and the same bits: each sum runs
// over its chunk's tiles in the same order (kNever keeps the products in the tasks).
class WinogradBackward {
 public:
  WinogradBackward(const Conv2dGeometry& g, const float* w, const float* dy, float* dx,
                   const float* x, float* workspace, int lanes = winograd_lanes(),
                   const DyOfSamples& dy_of = {},
                   TaskSpread spread = TaskSpread::kByThreads);
  int tasks() const;
  // Tasks write disjoint samples of dx and their own part of dW and db.
  void run(int task) const;
  // dw and db (overwritten), after every task has run; only where x was given.
  void finish(float* dw, float* db) const;

 private:
  // A chunk's (or a run's) dM, dx where asked, and V where x is given; returns its dy.
  const float* to_domain(const winograd::Chunk& chunk, float* dm, float* dv, float* v) const;
  void run_spread(int task) const;
  void spread_products() const;

  const Conv2dGeometry& g_;
  const float* dy_;
  float* dx_;
  const float* x_;
  float* u_;
  int lanes_;
  DyOfSamples dy_of_;
  bool spread_ = false;
  float* domains_ = nullptr;
};

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
