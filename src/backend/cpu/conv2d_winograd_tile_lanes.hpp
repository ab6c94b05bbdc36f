// What conv2d_winograd_tiles.cpp's gathered-window path needs to place its lanes: where each
// lane's tile lies, the lanes whose windows lie inside their planes, the runs of side-by-side
// tiles and the lane-major staging of windows. Included by
// that file alone (its own helpers, kept apart to keep each file short).
#pragma once

#include <algorithm>
#include <cstddef>

#include "backend/backend.hpp"
#include "backend/cpu/conv2d_winograd_lanes.hpp"
#include "backend/cpu/conv2d_winograd_tiles.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/lane_vectors.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd::tile_lanes {

inline int tile_rows(const Conv2dGeometry& g) {
  const int m = tile_outputs(g);
  return (g.out_height + m - 1) / m;
}
inline int tile_cols(const Conv2dGeometry& g) {
  const int m = tile_outputs(g);
  return (g.out_width + m - 1) / m;
}

// Where each lane's tile lies: the plane offset of its sample (negative for a lane past the
// chunk) and the plane coordinates of its first output; its first input is up and left of that
// by the padding.
template <int L>
struct LaneTiles {
  int sample[L];
  int out_row[L], out_col[L];
};

// For a lane group whose windows (rows x cols at the tiles' first inputs) all lie inside their
// planes: each lane's window start as an offset from channel 0 of the chunk's first sample, so
// that the windows of every lane can be moved together (conv2d_winograd_lanes.hpp). Returns the
// largest offset, or -1 where some lane has no tile or its window leaves the plane.
template <int L, int kRows, int kCols>
int interior_offsets(const LaneTiles<L>& l, int first_sample, std::size_t sample_floats,
                     int pad_top, int pad_left, int height, int width, int* offsets) {
  int largest = 0;
  for (int lane = 0; lane < L; ++lane) {
    const int row = l.out_row[lane] - pad_top, col = l.out_col[lane] - pad_left;
    if (l.sample[lane] < 0 || row < 0 || col < 0 || row + kRows > height || col + kCols > width) {
      return -1;
    }
    offsets[lane] =
        static_cast<int>((l.sample[lane] - first_sample) * sample_floats) + row * width + col;
    largest = std::max(largest, offsets[lane]);
  }
  return largest;
}

template <int L, int M>
LaneTiles<L> lanes_at(const Conv2dGeometry& g, const Chunk& c, std::size_t first_tile) {
  LaneTiles<L> l;
  const int cols = tile_cols(g), per_sample = tile_rows(g) * cols;
  const std::size_t chunk_tiles = static_cast<std::size_t>(c.samples) * per_sample;
  for (int lane = 0; lane < L; ++lane) {
    const std::size_t tile = first_tile + lane;
    l.sample[lane] = tile < chunk_tiles ? c.first_sample + static_cast<int>(tile / per_sample) : -1;
    const int within = static_cast<int>(tile % per_sample);
    l.out_row[lane] = within / cols * M;
    l.out_col[lane] = within % cols * M;
  }
  return l;
}

// Runs of lanes whose tiles (M outputs wide) sit side by side in one plane row
// (conv2d_winograd_lanes.hpp): a run goes on while the next lane has the same sample and tile row
// and the next tile column, up to
// max_length lanes; a lane for which inside(lane) is false is a run of length 0 at that lane, for
// the element-wise path.
template <int L, int M, typename Inside>
Runs<L> side_by_side_runs(const LaneTiles<L>& l, int max_length, Inside inside) {
  Runs<L> runs;
  for (int lane = 0; lane < L; ++lane) {
    const bool in = inside(lane);
    const int r = runs.count - 1;
    const bool extends = in && r >= 0 && runs.length[r] > 0 && runs.length[r] < max_length &&
                         l.sample[lane] == l.sample[lane - 1] &&
                         l.out_row[lane] == l.out_row[lane - 1] &&
                         l.out_col[lane] == l.out_col[lane - 1] + M;
    if (extends) {
      ++runs.length[r];
    } else {
      runs.first[runs.count] = lane;
      runs.length[runs.count++] = in ? 1 : 0;
    }
  }
  return runs;
}

template <typename T>
T* plane_of(T* a, int sample, int channels, int channel, std::size_t plane) {
  return a + (static_cast<std::size_t>(sample) * channels + channel) * plane;
}

// Lane-major staging of kRows x kCols values: f[(row * kCols + col) * L + lane].
template <int L, int kRows, int kCols>
struct Staging {
  alignas(64) float f[kRows * kCols * L];
  float& at(int i, int j, int lane) { return f[(i * kCols + j) * L + lane]; }
  void load(Lanes<L>* t) const {
    for (int e = 0; e < kRows * kCols; ++e) t[e] = load_lanes<L>(f + e * L);
  }
  void store(const Lanes<L>* t) {
    for (int e = 0; e < kRows * kCols; ++e) store_lanes<L>(f + e * L, t[e]);
  }
  // A window of a plane (height x width) at (row, col) into one lane, zero outside the plane.
  void gather(const float* plane, int height, int width, int row, int col, int lane) {
    if (row >= 0 && col >= 0 && row + kRows <= height && col + kCols <= width) {
      const float* src = plane + row * width + col;
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 8
        for (int j = 0; j < kCols; ++j) at(i, j, lane) = src[i * width + j];
      return;
    }
    for (int i = 0; i < kRows; ++i)
      for (int j = 0; j < kCols; ++j) {
        const int r = row + i, q = col + j;
        const bool in = r >= 0 && r < height && q >= 0 && q < width;
        at(i, j, lane) = in ? plane[r * width + q] : 0.0f;
      }
  }
  void zero(int lane) {
    for (int e = 0; e < kRows * kCols; ++e) f[e * L + lane] = 0.0f;
  }
};

}  // namespace winograd::tile_lanes
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
