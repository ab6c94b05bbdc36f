// Moving whole tiles between planes and lane vectors (conv2d_winograd_tiles.cpp): each lane's
// n x n window is n short rows of its plane, read or added as rows of kRowFloats floats (the
// floats past the window's n are read and ignored, or have zero added), and a 16 x 16 transpose
// turns the lanes' rows into one vector per window element. Element-by-element copies would
// cost a load and a store per float and lane.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu::winograd {

// A row's floats as moved: the widest window (n = 6) rounded up to a power of two.
constexpr int kRowFloats = 8;
static_assert(kLanes == 2 * kRowFloats, "a lane vector holds two window rows");

using Row = float __attribute__((vector_size(kRowFloats * sizeof(float))));
using LaneIndex = int __attribute__((vector_size(kLanes * sizeof(int))));

inline Row load_row(const float* p) {
  return load_vector<Row>(p);
}
inline void store_row(float* p, Row v) {
  store_vector(p, v);
}

// The lane picks of one stage of a 16 x 16 transpose: rows r and r + kBlock swap their
// off-diagonal blocks of kBlock lanes (indices >= kLanes pick from the second vector).
constexpr int swap_pick(int block, bool upper, int lane) {
  const bool high = (lane & block) != 0;
  return upper ? (high ? kLanes + lane : lane + block) : (high ? kLanes + lane - block : lane);
}

template <int kBlock, bool kUpper, std::size_t... kLane>
constexpr LaneIndex swap_mask(std::index_sequence<kLane...>) {
  return LaneIndex{swap_pick(kBlock, kUpper, static_cast<int>(kLane))...};
}

template <int kBlock>
inline void transpose_stage(Lanes* m) {
  constexpr LaneIndex lower = swap_mask<kBlock, false>(std::make_index_sequence<kLanes>{});
  constexpr LaneIndex upper = swap_mask<kBlock, true>(std::make_index_sequence<kLanes>{});
  for (int r = 0; r < kLanes; ++r) {
    if ((r & kBlock) != 0) continue;
    const Lanes a = m[r], b = m[r + kBlock];
    m[r] = __builtin_shuffle(a, b, lower);
    m[r + kBlock] = __builtin_shuffle(a, b, upper);
  }
}

// m[r][c] -> m[c][r] for a 16 x 16 block of lane vectors.
inline void transpose16(Lanes* m) {
  transpose_stage<8>(m);
  transpose_stage<4>(m);
  transpose_stage<2>(m);
  transpose_stage<1>(m);
}

// d[i * N + j] (lane l) = base[offsets[l] + i * width + j] for i, j < N; reads kRowFloats floats
// per row, so base[offsets[l] + (N - 1) * width + kRowFloats - 1] must be readable.
template <int N>
inline void gather_windows(const float* base, const int* offsets, int width, Lanes* d) {
  constexpr int kBlocks = (N + 1) / 2;
  for (int k = 0; k < kBlocks; ++k) {
    Lanes m[kLanes];
    for (int lane = 0; lane < kLanes; ++lane) {
      const float* src = base + offsets[lane] + 2 * k * width;
      const Row lo = load_row(src);
      const Row hi = 2 * k + 1 < N ? load_row(src + width) : Row{};
      m[lane] =
          __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
    transpose16(m);
    for (int c = 0; c < kLanes; ++c) {
      const int i = 2 * k + c / kRowFloats, j = c % kRowFloats;
      if (i < N && j < N) d[i * N + j] = m[c];
    }
  }
}

// Lanes whose windows sit side by side in one plane row (same sample and tile row, consecutive
// tile columns), added together as one run: their windows overlap by N - 2 columns, and adding
// them one by one would reload floats that a store a few instructions before wrote at another
// offset, which the processor cannot forward (measured: the stores then took most of the time).
struct Runs {
  int count = 0;
  int first[kLanes];
  int length[kLanes];
};

// The most windows of N columns, 2 apart, whose valid floats fit one lane vector.
template <int N>
constexpr int kMaxRun = (kLanes - N) / 2 + 1;

// The lane picks that move row `half` (0: lanes 0-7, 1: lanes 8-15) of a transposed lane vector
// to start at lane `shift`, zeros elsewhere (index kLanes picks lane 0 of a zero vector).
constexpr int shift_pick(int half, int shift, int lane) {
  const int q = lane - shift;
  return q >= 0 && q < kRowFloats ? half * kRowFloats + q : kLanes;
}
template <std::size_t... kLane>
constexpr std::array<LaneIndex, kLanes> shift_masks(int half, std::index_sequence<kLane...>) {
  std::array<LaneIndex, kLanes> m{};
  for (int shift = 0; shift < kLanes; ++shift) {
    m[shift] = LaneIndex{shift_pick(half, shift, static_cast<int>(kLane))...};
  }
  return m;
}
inline constexpr std::array<LaneIndex, kLanes> kShiftLow =
    shift_masks(0, std::make_index_sequence<kLanes>{});
inline constexpr std::array<LaneIndex, kLanes> kShiftHigh =
    shift_masks(1, std::make_index_sequence<kLanes>{});

// base[offsets[l] + i * width + j] += dd[i * N + j] (lane l) for i, j < N, a run of lanes at a
// time; each run's rows are added as kLanes floats from its first lane's window on, the floats
// past the run's windows getting zero, so kLanes floats from offsets[first] + (N - 1) * width
// must lie in the caller's part of base.
template <int N>
inline void scatter_add_windows(const Lanes* dd, const int* offsets, const Runs& runs, int width,
                                float* base) {
  constexpr int kBlocks = (N + 1) / 2;
  for (int k = 0; k < kBlocks; ++k) {
    Lanes m[kLanes];
    for (int c = 0; c < kLanes; ++c) {
      const int i = 2 * k + c / kRowFloats, j = c % kRowFloats;
      m[c] = i < N && j < N ? dd[i * N + j] : Lanes{};
    }
    transpose16(m);
    for (int r = 0; r < runs.count; ++r) {
      const int first = runs.first[r];
      Lanes low{}, high{};
      for (int q = 0; q < runs.length[r]; ++q) {
        low += __builtin_shuffle(m[first + q], Lanes{}, kShiftLow[2 * q]);
        high += __builtin_shuffle(m[first + q], Lanes{}, kShiftHigh[2 * q]);
      }
      float* dst = base + offsets[first] + 2 * k * width;
      store_lanes(dst, load_lanes(dst) + low);
      if (2 * k + 1 < N) store_lanes(dst + width, load_lanes(dst + width) + high);
    }
  }
}

// Output tiles (2 x 2) of a run of side-by-side lanes: the run's row i is 2L floats, float
// 2q + j coming from lane first + q of y[i * 2 + j].
constexpr int interleave_pick(int first, int p) {
  const int lane = first + p / 2;
  return (p % 2) * kLanes + (lane < kLanes ? lane : kLanes - 1);
}
template <std::size_t... kLane>
constexpr std::array<LaneIndex, kLanes> interleave_masks(std::index_sequence<kLane...>) {
  std::array<LaneIndex, kLanes> m{};
  for (int first = 0; first < kLanes; ++first) {
    m[first] = LaneIndex{interleave_pick(first, static_cast<int>(kLane))...};
  }
  return m;
}
inline constexpr std::array<LaneIndex, kLanes> kInterleave =
    interleave_masks(std::make_index_sequence<kLanes>{});

// Row i of the run starting at lane `first` (its first 2L floats; the rest is filler).
inline Lanes run_row(const Lanes* y, int i, int first) {
  return __builtin_shuffle(y[2 * i], y[2 * i + 1], kInterleave[first]);
}

// The inverse's lane picks: lanes first .. first + length - 1 of column j take floats j, 2 + j,
// ... of a run's row, the other lanes zero (pick kLanes of a zero vector).
inline LaneIndex run_column_mask(int first, int length, int j) {
  const LaneIndex lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const LaneIndex pick = 2 * (lane - first) + j;
  return (lane >= first && lane < first + length) ? pick : LaneIndex{} + kLanes;
}

}  // namespace dl::cpu::winograd
