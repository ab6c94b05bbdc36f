#include "backend/cpu/conv2d_direct.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/conv2d_direct_kernels.hpp"
#include "backend/cpu/thread_pool.hpp"

// Stride 1 makes output position p = oh * out_w + ow read input (ci, oh + i, ow + j) for tap
// (ci, i, j). Each sample's input is copied once into in_channels * kernel_width "shifted planes"
//   X[ci][j][r][q] = x[ci][r - pad_top][q + j - pad_left]   (zero outside x),
// r over the out_h + kh - 1 padded rows the outputs read, q over out_w. The input of tap (ci, i, j)
// for positions p, p+1, ... is then X[ci][j] + i * out_w + p on: contiguous floats, whatever the
// padding and however the rows break. Both passes are vectors over output positions
// (conv2d_direct_kernels.hpp):
//   forward  y[co][p..]  = b[co] + sum over taps of w[co][tap] * X[tap][p..]
//            a block of (kForwardChannels output channels x kForwardVectors position vectors)
//            accumulates in registers, the weights broadcast.
//   dW       dw[co][tap] = sum over samples and positions of dy[co][p..] * X[tap][p..]
//            a block of (kGradientChannels x kGradientTaps) 16-lane sums in registers runs
//            through a group of samples (kGroupPositions), is kept between groups in the task's
//            scratch and summed across lanes once at the task's end; db's lane sums ride along
//            with the first tap block.
// The copies are small (LeNet's first layer: 5 planes of 28 x 24 floats from a 28 x 28 image)
// next to the 16-fold re-reading of each input that im2col's 25 rows of 576 columns cost.
//
// Each output and each lane sum adds its products in an order that does not depend on the vector
// width (conv2d_direct_kernels.hpp), and lane_sum adds a sum's 16 lanes in one fixed order. Tasks
// are cut by the layer's size as in conv2d.cpp (forward: samples worth kTaskMacs; dW: samples
// worth kMacsPerPartialFloat per weight), and the dW tasks' partials are added in task order:
// bit-identical on any thread count.

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using namespace direct_detail;

// The largest in_channels * kernel_height * kernel_width the direct path takes. One thread, batch
// 128, 5x5 kernels, microseconds, direct against columns (oneDNN):
//   28x28 -> 20 x 24x24:  Cin 1: forward 340 / 475, dW 388 / 757;  Cin 8: 2588 / 3463, 3395 / 4642
//   12x12 -> 50 x 8x8:    Cin 1: forward 108 / 126, dW 138 / 211;  Cin 4: 398 / 427, 544 / 698
//                         Cin 6: 582 / 592, 802 / 774;  Cin 20 (LeNet's second layer): 1951 /
//                         2037, 2814 / 2192
// Large planes gain at every channel count measured; small ones lose dW's share from 150 taps.
constexpr int kDirectMaxTaps = 100;

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

// The kSumLanes lanes at v added in one fixed order.
float lane_sum(const float* v) {
  float h[kSumLanes];
  std::memcpy(h, v, sizeof h);
  for (int width = kSumLanes / 2; width > 0; width /= 2) {
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
  std::size_t shifted = 0;  // one sample's planes, then zeros that tail vectors may read
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
  l.vectors = (l.positions + kNative - 1) / kNative;
  l.taps = g.in_channels * g.kernel_height * g.kernel_width;
  l.plane = static_cast<std::size_t>(l.rows) * g.out_width;
  l.shifted = round_up_to_lines(l.plane * g.in_channels * g.kernel_width + kSumLanes);
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
  return round_up_to_lines(l.weights + g.out_channels);
}

// Row r of one plane: x's row r - pad_top (src, already moved by the plane's shift), columns
// [lo, hi) of the row; zeros elsewhere.
__attribute__((noinline)) void padded_row(const float* src, int lo, int hi, int ow, float* row) {
  std::fill(row, row + lo, 0.0f);
  std::copy(src + lo, src + hi, row + lo);
  std::fill(row + hi, row + ow, 0.0f);
}

// One sample's shifted planes (the layout above) from its input x. Rows without horizontal
// padding are copied in whole vectors, the last one overlapping its neighbour: library calls per
// row of a few dozen floats cost LeNet's first layer 4% of its forward pass (355 us against 342).
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
      if (lo > 0 || hi < ow || ow < kNative) {
        for (int r = top; r < bottom; ++r, src += in_w, row += ow) padded_row(src, lo, hi, ow, row);
        continue;
      }
      for (int r = top; r < bottom; ++r, src += in_w, row += ow) {
        for (int q = 0; q + kNative < ow; q += kNative) store(row + q, load(src + q));
        store(row + ow - kNative, load(src + ow - kNative));
      }
    }
  }
  const std::size_t used = l.plane * g.in_channels * g.kernel_width;
  std::fill(planes + used, planes + l.shifted, 0.0f);
}

// ---- forward ---------------------------------------------------------------------------------

// y: sample r.begin's output.
void forward_samples(const Conv2dGeometry& g, const Layout& l, SliceRange r, const float* x,
                     const float* packed, const float* b, float* y) {
  float* planes = thread_scratch(l.shifted + kForwardChannels * kNative);
  float* tail = planes + l.shifted;
  const int last_vector = l.vectors - 1;
  const int last_count = l.positions - last_vector * kNative;
  for (int n = r.begin; n < r.end; ++n) {
    build_shifted(g, l, x + n * l.x_sample, planes);
    float* yn = y + (n - r.begin) * l.y_sample;
    const ForwardArgs a{planes, l.offsets.data(), packed,         b,          yn,
                        tail,   l.taps,           g.out_channels, l.positions};
    for (int v0 = 0; v0 < l.vectors; v0 += kForwardVectors) {
      const int vectors = std::min(kForwardVectors, l.vectors - v0);
      for (int c0 = 0; c0 < g.out_channels; c0 += kForwardChannels) {
        const int channels = std::min(kForwardChannels, g.out_channels - c0);
        kForwardKernels[channels - 1][vectors - 1](a, c0, v0 * kNative);
        if (v0 + vectors > last_vector && last_count < kNative) {
          for (int c = 0; c < channels; ++c) {
            std::copy(tail + c * kNative, tail + c * kNative + last_count,
                      yn + (c0 + c) * l.positions + last_vector * kNative);
          }
        }
      }
    }
  }
}

// ---- weight gradient -------------------------------------------------------------------------

// The sums of dW and db over samples r into dw and db (overwritten; zero for an empty range); dy
// points at sample r.begin's output gradient.
void gradient_samples(const Conv2dGeometry& g, const Layout& l, SliceRange r, const float* x,
                      const float* dy, float* dw, float* db) {
  const std::size_t sums_floats = (l.weights + g.out_channels) * kSumLanes;
  float* sums = thread_scratch(sums_floats + l.shifted * l.group);
  float* planes = sums + sums_floats;
  std::fill(sums, sums + sums_floats, 0.0f);
  for (int n0 = r.begin; n0 < r.end; n0 += l.group) {
    const int samples = std::min(l.group, r.end - n0);
    for (int n = 0; n < samples; ++n) {
      build_shifted(g, l, x + (n0 + n) * l.x_sample, planes + n * l.shifted);
    }
    const GradientArgs a{planes,     l.offsets.data(), dy + (n0 - r.begin) * l.y_sample,
                         sums,       l.shifted,        l.y_sample,
                         samples,    l.taps,           g.out_channels,
                         l.positions};
    for (int c0 = 0; c0 < g.out_channels; c0 += kGradientChannels) {
      const int channels = std::min(kGradientChannels, g.out_channels - c0);
      for (int t0 = 0; t0 < l.taps; t0 += kGradientTaps) {
        const int taps = std::min(kGradientTaps, l.taps - t0);
        kGradientKernels[channels - 1][taps - 1][t0 == 0](a, c0, t0);
      }
    }
  }
  for (std::size_t e = 0; e < l.weights; ++e) dw[e] = lane_sum(sums + e * kSumLanes);
  for (int c = 0; c < g.out_channels; ++c) db[c] = lane_sum(sums + (l.weights + c) * kSumLanes);
}

SliceRange samples_of(const Conv2dGeometry& g, int per_task, int task) {
  return {std::min(g.batch, task * per_task), std::min(g.batch, (task + 1) * per_task)};
}

}  // namespace

bool conv2d_direct_pays() {
  return kDirectPays;
}

bool conv2d_direct_applies(const Conv2dGeometry& g) {
  return kDirectPays && g.stride_height == 1 && g.stride_width == 1 && g.out_height > 0 &&
         g.out_width > 0 && g.in_channels * g.kernel_height * g.kernel_width <= kDirectMaxTaps;
}

std::size_t conv2d_direct_workspace_floats(const Conv2dGeometry& g) {
  const Layout l = layout_of(g);
  return partial_floats(g, l) * (task_count(g.batch, l.gradient_samples) - 1);
}

void conv2d_direct_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b,
                           float* y, const SamplesHook& done) {
  const Layout l = layout_of(g);
  // [tap][out_channel], so a block's weights for one tap are adjacent.
  std::vector<float> packed(l.weights);
  for (int c = 0; c < g.out_channels; ++c) {
    for (int t = 0; t < l.taps; ++t) packed[t * g.out_channels + c] = w[c * l.taps + t];
  }
  parallel_slices(task_count(g.batch, l.forward_samples), [&](int i) {
    const SliceRange r = samples_of(g, l.forward_samples, i);
    float* outputs = outputs_of_samples(done, y, l.y_sample, r.begin, r.end);
    forward_samples(g, l, r, x, packed.data(), b, outputs);
    call_for_samples(done, r.begin, r.end, outputs);
  });
}

void conv2d_direct_weight_gradient(const Conv2dGeometry& g, const float* x, const float* dy,
                                   float* dw, float* db, float* workspace,
                                   const DyOfSamples& dy_of) {
  const Layout l = layout_of(g);
  const int tasks = task_count(g.batch, l.gradient_samples);
  const std::size_t stride = partial_floats(g, l);
  // Task 0 sums into dw and db, the others into their part of the workspace: dW, then db.
  parallel_slices(tasks, [&](int i) {
    float* pdw = i == 0 ? dw : workspace + (i - 1) * stride;
    float* pdb = i == 0 ? db : pdw + l.weights;
    const SliceRange r = samples_of(g, l.gradient_samples, i);
    if (r.size() == 0) return gradient_samples(g, l, r, x, dy, pdw, pdb);
    const float* dy_first = dy_of ? dy_of(r.begin, r.end) : dy + r.begin * l.y_sample;
    gradient_samples(g, l, r, x, dy_first, pdw, pdb);
  });
  // Partials added in task order, element by element.
  parallel_elementwise(l.weights + g.out_channels, [&](std::size_t begin, std::size_t end) {
    for (std::size_t e = begin; e < end; ++e) {
      float* out = e < l.weights ? dw + e : db + (e - l.weights);
      for (int p = 1; p < tasks; ++p) *out += workspace[(p - 1) * stride + e];
    }
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
