#include "backend/cpu/conv2d_direct.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/thread_pool.hpp"

// Stride 1 makes output position p = oh * out_w + ow read input (ci, oh + i, ow + j) for tap
// (ci, i, j). Each sample's input is copied once into in_channels * kernel_width "shifted planes"
//   X[ci][j][r][q] = x[ci][r - pad_top][q + j - pad_left]   (zero outside x),
// r over the out_h + kh - 1 padded rows the outputs read, q over out_w. The input of tap (ci, i, j)
// for positions p .. p+15 is then X[ci][j] + i * out_w + p: sixteen contiguous floats, whatever
// the padding and however the rows break. Both passes are vectors over output positions:
//   forward  y[co][p..]  = b[co] + sum over taps of w[co][tap] * X[tap][p..]
//            a block of (kForwardChannels output channels x kForwardVectors position vectors)
//            accumulates in registers, the weights broadcast.
//   dW       dw[co][tap] = sum over samples and positions of dy[co][p..] * X[tap][p..]
//            a block of (kGradientChannels x kGradientTaps) vectors of lane sums in registers
//            runs through a group of samples (kGroupPositions), is kept between groups in the
//            task's scratch and summed across lanes once at the task's end; db's lane sums ride
//            along with the first tap block.
// The copies are small (LeNet's first layer: 5 planes of 28 x 24 floats from a 28 x 28 image)
// next to the 16-fold re-reading of each input that im2col's 25 rows of 576 columns cost.
//
// Each output and each lane sum adds its products in tap order and position order whatever the
// machine: the lane count is fixed at 16 (GCC vector types, split in two on 256-bit SIMD), and a
// lane sum's 16 lanes are added in one fixed pairwise order. Tasks are cut by the layer's size as
// in conv2d.cpp (forward: samples worth kTaskMacs; dW: samples worth kMacsPerPartialFloat per
// weight), and the dW tasks' partials are added in task order: bit-identical on any thread count.

namespace dl::cpu {

namespace {

constexpr int kLanes = 16;
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

// The largest in_channels * kernel_height * kernel_width the direct path takes. One thread, batch
// 128, 5x5 kernels, microseconds, direct against columns (oneDNN):
//   28x28 -> 20 x 24x24:  Cin 1: forward 340 / 475, dW 388 / 757;  Cin 8: 2588 / 3463, 3395 / 4642
//   12x12 -> 50 x 8x8:    Cin 1: forward 108 / 126, dW 138 / 211;  Cin 4: 398 / 427, 544 / 698
//                         Cin 6: 582 / 592, 802 / 774;  Cin 20 (LeNet's second layer): 1951 /
//                         2037, 2814 / 2192
// Large planes gain at every channel count measured; small ones lose dW's share from 150 taps.
constexpr int kDirectMaxTaps = 100;

// Register blocks: 20 accumulators plus the operands of one step in AVX-512's 32 registers.
constexpr int kForwardChannels = 5, kForwardVectors = 4;
constexpr int kGradientChannels = 4, kGradientTaps = 5;
// Multiply-adds a forward task takes at least (LeNet's first layer: 4 samples).
constexpr std::size_t kTaskMacs = std::size_t{1} << 20;
// Multiply-adds per weight a dW task takes at least (LeNet's first layer: 8 samples, 16 tasks at
// batch 128). Tasks of 16 samples measured 3% faster on one thread and would halve the threads
// that can share the layer.
constexpr std::size_t kMacsPerPartialFloat = 4096;
// Output positions a dW register block covers between loading and storing its lane sums: a
// group of samples where one sample has fewer. 12x12 -> 50 x 8x8 from one channel (64
// positions): 283 us one sample at a time, 154 in groups of 4 samples, 138 of 8, 143 of 16.
constexpr std::size_t kGroupPositions = 512;
constexpr std::size_t kAlignFloats = 16;

std::size_t round_up(std::size_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, const Vec& v) {
  std::memcpy(p, &v, sizeof v);
}
// The first `count` lanes from p, zeros after them.
inline Vec load_first(const float* p, int count) {
  Vec v{};
  for (int l = 0; l < count; ++l) v[l] = p[l];
  return v;
}
inline void store_first(float* p, Vec v, int count) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof lanes);
  std::memcpy(p, lanes, count * sizeof(float));
}
// Left alone, GCC folds a load into every FMA that uses it: the dW step then loads each input
// vector once per output channel, and ran LeNet's first layer 1.6x slower (687 us against 436 on
// one thread). An empty asm that takes the vector in a register keeps the one load. Where a Vec
// is not one register (no AVX-512) there is no such constraint, and the code is the same without.
inline void keep_in_register(Vec& v) {
#if defined(__AVX512F__)
  asm("" : "+v"(v));
#else
  (void)v;
#endif
}

float lane_sum(const Vec& v) {
  float h[kLanes];
  std::memcpy(h, &v, sizeof h);
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) h[l] += h[l + width];
  }
  return h[0];
}

struct Layout {
  int rows = 0;             // padded input rows the outputs read
  int positions = 0;        // out_h * out_w
  int vectors = 0;          // position vectors, the last one possibly partial
  int taps = 0;             // in_channels * kernel_height * kernel_width
  std::size_t plane = 0;    // rows * out_w
  std::size_t shifted = 0;  // one sample's planes, then kLanes zeros that tail vectors may read
  std::size_t x_sample = 0, y_sample = 0, weights = 0;
  int forward_samples = 1, gradient_samples = 1;  // per task
  int group = 1;             // samples a dW register block runs through before it stores its sums
  std::vector<int> offsets;  // tap (ci, i, j) -> X[ci][j] + i * out_w
};

int samples_for(const Conv2dGeometry& g, std::size_t per_sample, std::size_t wanted) {
  per_sample = std::max<std::size_t>(per_sample, 1);
  return static_cast<int>(std::clamp<std::size_t>((wanted + per_sample - 1) / per_sample, 1,
                                                  static_cast<std::size_t>(std::max(g.batch, 1))));
}

Layout layout_of(const Conv2dGeometry& g) {
  Layout l;
  l.rows = g.out_height + g.kernel_height - 1;
  l.positions = g.out_height * g.out_width;
  l.vectors = (l.positions + kLanes - 1) / kLanes;
  l.taps = g.in_channels * g.kernel_height * g.kernel_width;
  l.plane = static_cast<std::size_t>(l.rows) * g.out_width;
  l.shifted = round_up(l.plane * g.in_channels * g.kernel_width + kLanes);
  l.x_sample = static_cast<std::size_t>(g.in_channels) * g.in_height * g.in_width;
  l.y_sample = static_cast<std::size_t>(g.out_channels) * l.positions;
  l.weights = static_cast<std::size_t>(g.out_channels) * l.taps;
  l.forward_samples = samples_for(g, l.weights * l.positions, kTaskMacs);
  l.gradient_samples = samples_for(g, l.positions, kMacsPerPartialFloat);
  l.group = std::min(samples_for(g, l.positions, kGroupPositions), l.gradient_samples);
  for (int ci = 0; ci < g.in_channels; ++ci) {
    for (int i = 0; i < g.kernel_height; ++i) {
      for (int j = 0; j < g.kernel_width; ++j) {
        l.offsets.push_back(static_cast<int>((ci * g.kernel_width + j) * l.plane) +
                            i * g.out_width);
      }
    }
  }
  return l;
}

std::size_t partial_floats(const Conv2dGeometry& g, const Layout& l) {
  return round_up(l.weights + g.out_channels);
}

// Row r of one plane: x's row r - pad_top (src, already moved by the plane's shift), columns
// [lo, hi) of the row; zeros elsewhere.
__attribute__((noinline)) void padded_row(const float* src, int lo, int hi, int ow, float* row) {
  std::fill(row, row + lo, 0.0f);
  std::copy(src + lo, src + hi, row + lo);
  std::fill(row + hi, row + ow, 0.0f);
}

// One sample's shifted planes (the layout above) from its input x. Rows without horizontal
// padding are copied in whole vectors, the last one overlapping its neighbour: a library call
// per row of a few dozen floats made the copy a tenth of LeNet's first layer's forward pass.
void build_shifted(const Conv2dGeometry& g, const Layout& l, const float* x, float* planes) {
  const int ow = g.out_width, in_w = g.in_width;
  // Rows [top, bottom) of every plane read x, the others are padding.
  const int top = std::min(g.pad_top, l.rows);
  const int bottom = std::clamp(g.pad_top + g.in_height, top, l.rows);
  for (int ci = 0; ci < g.in_channels; ++ci) {
    for (int j = 0; j < g.kernel_width; ++j) {
      float* plane = planes + (ci * g.kernel_width + j) * l.plane;
      std::fill(plane, plane + top * ow, 0.0f);
      std::fill(plane + bottom * ow, plane + l.rows * ow, 0.0f);
      // Columns q in [lo, hi) read x's columns q + shift; the others are padding.
      const int shift = j - g.pad_left;
      const int lo = std::clamp(-shift, 0, ow);
      const int hi = std::clamp(in_w - shift, lo, ow);
      const float* src =
          x + (static_cast<std::size_t>(ci) * g.in_height + top - g.pad_top) * in_w + shift;
      float* row = plane + top * ow;
      if (lo > 0 || hi < ow || ow < kLanes) {
        for (int r = top; r < bottom; ++r, src += in_w, row += ow) padded_row(src, lo, hi, ow, row);
        continue;
      }
      for (int r = top; r < bottom; ++r, src += in_w, row += ow) {
        for (int q = 0; q + kLanes < ow; q += kLanes) store(row + q, load(src + q));
        store(row + ow - kLanes, load(src + ow - kLanes));
      }
    }
  }
  const std::size_t used = l.plane * g.in_channels * g.kernel_width;
  std::fill(planes + used, planes + l.shifted, 0.0f);
}

// ---- forward ---------------------------------------------------------------------------------

struct ForwardArgs {
  const float* planes;  // one sample's shifted planes
  const int* offsets;   // per tap
  const float* packed;  // weights as [tap][out_channels]
  const float* bias;
  float* y;  // one sample's output, [out_channels][positions]
  int taps, out_channels, positions;
};

// Outputs of channels c0 .. c0+C-1 at positions p0 .. p0+16V-1 (fewer past the last position).
template <int C, int V>
void forward_block(const ForwardArgs& a, int c0, int p0) {
  Vec acc[C][V];
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[c][v] = Vec{} + a.bias[c0 + c];
  }
  const float* x0 = a.planes + p0;
  const float* w = a.packed + c0;
  for (int t = 0; t < a.taps; ++t, w += a.out_channels) {
    const float* xt = x0 + a.offsets[t];
    Vec xv[V];
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) xv[v] = load(xt + v * kLanes);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) {
      const float wc = w[c];
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) acc[c][v] += wc * xv[v];
    }
  }
  float* out = a.y + static_cast<std::size_t>(c0) * a.positions + p0;
  const int last = std::min(kLanes, a.positions - p0 - (V - 1) * kLanes);  // in the last vector
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c, out += a.positions) {
#pragma GCC unroll 16
    for (int v = 0; v + 1 < V; ++v) store(out + v * kLanes, acc[c][v]);
    if (last == kLanes) {
      store(out + (V - 1) * kLanes, acc[c][V - 1]);
    } else {
      store_first(out + (V - 1) * kLanes, acc[c][V - 1], last);
    }
  }
}

using ForwardKernel = void (*)(const ForwardArgs&, int, int);
template <int C, int... V>
constexpr std::array<ForwardKernel, sizeof...(V)> forward_row(std::integer_sequence<int, V...>) {
  return {{&forward_block<C, V + 1>...}};
}
template <int... C>
constexpr auto forward_table(std::integer_sequence<int, C...>) {
  return std::array<std::array<ForwardKernel, kForwardVectors>, sizeof...(C)>{
      {forward_row<C + 1>(std::make_integer_sequence<int, kForwardVectors>())...}};
}
// kForwardKernels[C - 1][V - 1]: the block of C channels and V vectors.
constexpr auto kForwardKernels = forward_table(std::make_integer_sequence<int, kForwardChannels>());

void forward_samples(const Conv2dGeometry& g, const Layout& l, SliceRange r, const float* x,
                     const float* packed, const float* b, float* y) {
  float* planes = thread_scratch(l.shifted);
  for (int n = r.begin; n < r.end; ++n) {
    build_shifted(g, l, x + n * l.x_sample, planes);
    const ForwardArgs a{planes, l.offsets.data(), packed,     b, y + n * l.y_sample,
                        l.taps, g.out_channels,   l.positions};
    for (int v0 = 0; v0 < l.vectors; v0 += kForwardVectors) {
      const int vectors = std::min(kForwardVectors, l.vectors - v0);
      for (int c0 = 0; c0 < g.out_channels; c0 += kForwardChannels) {
        const int channels = std::min(kForwardChannels, g.out_channels - c0);
        kForwardKernels[channels - 1][vectors - 1](a, c0, v0 * kLanes);
      }
    }
  }
}

// ---- weight gradient -------------------------------------------------------------------------

struct GradientArgs {
  const float* planes;  // a group of samples' shifted planes, one after another
  const int* offsets;   // per tap
  const float* dy;      // their output gradients, [out_channels][positions] each
  float* sums;          // lane sums: dw's [out_channels][taps] vectors, then db's [out_channels]
  std::size_t planes_stride, dy_stride;  // from one sample to the next
  int samples, taps, out_channels, positions;
};

template <int C, int T, bool kBias>
__attribute__((always_inline)) inline void gradient_step(Vec (&acc)[C][T], Vec (&bias)[C],
                                                         const Vec (&d)[C],
                                                         const float* const (&xt)[T], int p) {
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
    if (kBias) bias[c] += d[c];
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    Vec xv = load(xt[t] + p);
    keep_in_register(xv);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c][t] += d[c] * xv;
  }
}

// Adds a group of samples' products of channels c0 .. c0+C-1 and taps t0 .. t0+T-1 (and db's
// sums of those channels, with kBias) to their lane sums.
template <int C, int T, bool kBias>
void gradient_block(const GradientArgs& a, int c0, int t0) {
  Vec acc[C][T], bias[C];
  const auto sum_of = [&](int c, int t) { return a.sums + ((c0 + c) * a.taps + t0 + t) * kLanes; };
  const auto bias_sum_of = [&](int c) {
    return a.sums + (a.out_channels * a.taps + c0 + c) * kLanes;
  };
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[c][t] = load(sum_of(c, t));
    bias[c] = kBias ? load(bias_sum_of(c)) : Vec{};
  }
  for (int n = 0; n < a.samples; ++n) {
    const float* xt[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xt[t] = a.planes + n * a.planes_stride + a.offsets[t0 + t];
    const float* dy = a.dy + n * a.dy_stride + static_cast<std::size_t>(c0) * a.positions;
    Vec d[C];
    int p = 0;
    for (; p + kLanes <= a.positions; p += kLanes) {
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) d[c] = load(dy + c * a.positions + p);
      gradient_step<C, T, kBias>(acc, bias, d, xt, p);
    }
    if (p < a.positions) {
// Zeros past the last position: their products (with finite planes) add nothing.
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) d[c] = load_first(dy + c * a.positions + p, a.positions - p);
      gradient_step<C, T, kBias>(acc, bias, d, xt, p);
    }
  }
#pragma GCC unroll 16
  for (int c = 0; c < C; ++c) {
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) store(sum_of(c, t), acc[c][t]);
    if (kBias) store(bias_sum_of(c), bias[c]);
  }
}

using GradientKernel = void (*)(const GradientArgs&, int, int);
template <int C, int... T>
constexpr std::array<std::array<GradientKernel, 2>, sizeof...(T)> gradient_row(
    std::integer_sequence<int, T...>) {
  return {{{&gradient_block<C, T + 1, false>, &gradient_block<C, T + 1, true>}...}};
}
template <int... C>
constexpr auto gradient_table(std::integer_sequence<int, C...>) {
  return std::array<std::array<std::array<GradientKernel, 2>, kGradientTaps>, sizeof...(C)>{
      {gradient_row<C + 1>(std::make_integer_sequence<int, kGradientTaps>())...}};
}
// kGradientKernels[C - 1][T - 1][with db]: the block of C channels and T taps.
constexpr auto kGradientKernels =
    gradient_table(std::make_integer_sequence<int, kGradientChannels>());

// The sums of dW and db over samples r into dw and db (overwritten; zero for an empty range).
void gradient_samples(const Conv2dGeometry& g, const Layout& l, SliceRange r, const float* x,
                      const float* dy, float* dw, float* db) {
  const std::size_t sums_floats = (l.weights + g.out_channels) * kLanes;
  float* sums = thread_scratch(sums_floats + l.shifted * l.group);
  float* planes = sums + sums_floats;
  std::fill(sums, sums + sums_floats, 0.0f);
  for (int n0 = r.begin; n0 < r.end; n0 += l.group) {
    const int samples = std::min(l.group, r.end - n0);
    for (int n = 0; n < samples; ++n) {
      build_shifted(g, l, x + (n0 + n) * l.x_sample, planes + n * l.shifted);
    }
    const GradientArgs a{
        planes,  l.offsets.data(), dy + n0 * l.y_sample, sums,       l.shifted, l.y_sample,
        samples, l.taps,           g.out_channels,       l.positions};
    for (int c0 = 0; c0 < g.out_channels; c0 += kGradientChannels) {
      const int channels = std::min(kGradientChannels, g.out_channels - c0);
      for (int t0 = 0; t0 < l.taps; t0 += kGradientTaps) {
        const int taps = std::min(kGradientTaps, l.taps - t0);
        kGradientKernels[channels - 1][taps - 1][t0 == 0](a, c0, t0);
      }
    }
  }
  for (std::size_t e = 0; e < l.weights; ++e) dw[e] = lane_sum(load(sums + e * kLanes));
  for (int c = 0; c < g.out_channels; ++c) {
    db[c] = lane_sum(load(sums + (l.weights + c) * kLanes));
  }
}

SliceRange samples_of(const Conv2dGeometry& g, int per_task, int task) {
  return {std::min(g.batch, task * per_task), std::min(g.batch, (task + 1) * per_task)};
}

}  // namespace

bool conv2d_direct_applies(const Conv2dGeometry& g) {
  return g.stride_height == 1 && g.stride_width == 1 && g.out_height > 0 && g.out_width > 0 &&
         g.in_channels * g.kernel_height * g.kernel_width <= kDirectMaxTaps;
}

std::size_t conv2d_direct_workspace_floats(const Conv2dGeometry& g) {
  const Layout l = layout_of(g);
  return partial_floats(g, l) * (task_count(g.batch, l.gradient_samples) - 1);
}

void conv2d_direct_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                           float* y) {
  const Layout l = layout_of(g);
  // [tap][out_channel], so a block's weights for one tap are adjacent.
  std::vector<float> packed(l.weights);
  for (int c = 0; c < g.out_channels; ++c) {
    for (int t = 0; t < l.taps; ++t) packed[t * g.out_channels + c] = w[c * l.taps + t];
  }
  parallel_slices(task_count(g.batch, l.forward_samples), [&](int i) {
    forward_samples(g, l, samples_of(g, l.forward_samples, i), x, packed.data(), b, y);
  });
}

void conv2d_direct_weight_gradient(const Conv2dGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, float* workspace) {
  const Layout l = layout_of(g);
  const int tasks = task_count(g.batch, l.gradient_samples);
  const std::size_t stride = partial_floats(g, l);
  // Task 0 sums into dw and db, the others into their part of the workspace: dW, then db.
  parallel_slices(tasks, [&](int i) {
    float* pdw = i == 0 ? dw : workspace + (i - 1) * stride;
    float* pdb = i == 0 ? db : pdw + l.weights;
    gradient_samples(g, l, samples_of(g, l.gradient_samples, i), x, dy, pdw, pdb);
  });
  // Partials added in task order, element by element.
  parallel_ranges(l.weights + g.out_channels, [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      float* out = e < l.weights ? dw + e : db + (e - l.weights);
      for (int p = 1; p < tasks; ++p) *out += workspace[(p - 1) * stride + e];
    }
  });
}

}  // namespace dl::cpu
