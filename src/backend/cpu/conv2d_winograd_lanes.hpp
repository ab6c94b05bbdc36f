// Moving whole tiles between planes and lane vectors of L floats (conv2d_winograd_tiles.cpp):
// each lane's n x n window is n short rows of its plane, read or added as rows of kRowFloats
// floats (the floats past the window's n are read and ignored, or have zero added), and an
// L x L transpose turns the lanes' rows into one vector per window element; a lane vector holds
// L / kRowFloats rows (two with 16 lanes, one with 8). Element-by-element copies would cost a
// load and a store per float and lane.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"
#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

// A row's floats as moved: the widest window (n = 6) rounded up to a power of two.
constexpr int kRowFloats = 8;
// Window rows per lane vector.
template <int L>
constexpr int kRowsPerVector = L / kRowFloats;

using Row = Lanes<kRowFloats>;

inline Row load_row(const float* p) {
  return load_vector<Row>(p);
}

// Copies count floats in pieces of 8, 4, 2 and 1: moves of known sizes, where a copy of a length
// known only at run time becomes a library call, dearer than the copy for rows this short
// (LeNet's second layer: 8 floats).
inline void copy_short_row(const float* __restrict src, int count, float* __restrict dst) {
  using Four = float __attribute__((vector_size(4 * sizeof(float))));
  using Two = float __attribute__((vector_size(2 * sizeof(float))));
  int e = 0;
  for (; e + 8 <= count; e += 8) store_vector(dst + e, load_vector<Lanes<8>>(src + e));
  if (e + 4 <= count) {
    store_vector(dst + e, load_vector<Four>(src + e));
    e += 4;
  }
  if (e + 2 <= count) {
    store_vector(dst + e, load_vector<Two>(src + e));
    e += 2;
  }
  if (e < count) dst[e] = src[e];
}

// The lane picks of one stage of an L x L transpose: rows r and r + kBlock swap their
// off-diagonal blocks of kBlock lanes (indices >= L pick from the second vector).
constexpr int swap_pick(int lanes, int block, bool upper, int lane) {
  const bool high = (lane & block) != 0;
  return upper ? (high ? lanes + lane : lane + block) : (high ? lanes + lane - block : lane);
}

template <int L, int kBlock, bool kUpper, std::size_t... kLane>
constexpr LaneIndex<L> swap_mask(std::index_sequence<kLane...>) {
  return LaneIndex<L>{swap_pick(L, kBlock, kUpper, static_cast<int>(kLane))...};
}

template <int L, int kBlock>
inline void transpose_stage(Lanes<L>* m) {
  constexpr LaneIndex<L> lower = swap_mask<L, kBlock, false>(std::make_index_sequence<L>{});
  constexpr LaneIndex<L> upper = swap_mask<L, kBlock, true>(std::make_index_sequence<L>{});
  for (int r = 0; r < L; ++r) {
    if ((r & kBlock) != 0) continue;
    const Lanes<L> a = m[r], b = m[r + kBlock];
    m[r] = __builtin_shuffle(a, b, lower);
    m[r + kBlock] = __builtin_shuffle(a, b, upper);
  }
}

// m[r][c] -> m[c][r] for an L x L block of lane vectors.
template <int L>
inline void transpose(Lanes<L>* m) {
  if constexpr (L == 16) transpose_stage<L, 8>(m);
  transpose_stage<L, 4>(m);
  transpose_stage<L, 2>(m);
  transpose_stage<L, 1>(m);
}

// d[i * N + j] (lane l) = base[offsets[l] + i * width + j] for i, j < N; reads kRowFloats floats
// per row, so base[offsets[l] + (N - 1) * width + kRowFloats - 1] must be readable.
template <int L, int N>
inline void gather_windows(const float* base, const int* offsets, int width, Lanes<L>* d) {
  constexpr int kRows = kRowsPerVector<L>;
  constexpr int kBlocks = (N + kRows - 1) / kRows;
  for (int k = 0; k < kBlocks; ++k) {
    Lanes<L> m[L];
    for (int lane = 0; lane < L; ++lane) {
      const float* src = base + offsets[lane] + kRows * k * width;
      const Row lo = load_row(src);
      if constexpr (kRows == 2) {
        const Row hi = 2 * k + 1 < N ? load_row(src + width) : Row{};
        m[lane] =
            __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      } else {
        m[lane] = lo;
      }
    }
    transpose<L>(m);
    for (int c = 0; c < L; ++c) {
      const int i = kRows * k + c / kRowFloats, j = c % kRowFloats;
      if (i < N && j < N) d[i * N + j] = m[c];
    }
  }
}

// Lanes whose windows sit side by side in one plane row (same sample and tile row, consecutive
// tile columns), added together as one run: their windows overlap by N - M columns, and adding
// them one by one would reload floats that a store a few instructions before wrote at another
// offset, which the processor cannot forward (measured: the stores then took most of the time).
template <int L>
struct Runs {
  int count = 0;
  int first[L];
  int length[L];
};

// A run's row is added as kRunFloats floats: one vector of 16 lanes, or two of 8 (a run of 8
// lanes adding 8 floats at a time would overlap the next run's floats partly, and the processor
// cannot forward a store to a load that overlaps it partly: with 8-float runs the adds took a
// third of the input gradient's transforms).
constexpr int kRunFloats = 2 * kRowFloats;

// The most windows of N columns, M apart, whose valid floats fit a run's row.
template <int N, int M>
constexpr int kMaxRun = (kRunFloats - N) / M + 1;

// The lane picks that move window row `row` of a transposed lane vector (lanes row * 8 to
// row * 8 + 7) to start `shift` floats into a run's row, for the vector that holds the run's
// floats from `offset` on (zeros elsewhere: index L picks lane 0 of a zero vector).
constexpr int span_pick(int lanes, int row, int offset, int shift, int lane) {
  const int q = lane + offset - shift;
  return q >= 0 && q < kRowFloats ? row * kRowFloats + q : lanes;
}
template <int L, std::size_t... kLane>
constexpr std::array<LaneIndex<L>, kRunFloats> span_masks(int row, int offset,
                                                          std::index_sequence<kLane...>) {
  std::array<LaneIndex<L>, kRunFloats> m{};
  for (int shift = 0; shift < kRunFloats; ++shift) {
    m[shift] = LaneIndex<L>{span_pick(L, row, offset, shift, static_cast<int>(kLane))...};
  }
  return m;
}
// 16 lanes: window rows 0 and 1 of a transposed vector into their runs' rows. 8 lanes: the one
// window row into its run's row's floats 0-7 and 8-15.
template <int L>
inline constexpr std::array<LaneIndex<L>, kRunFloats> kSpanFirst =
    span_masks<L>(0, 0, std::make_index_sequence<L>{});
template <int L>
inline constexpr std::array<LaneIndex<L>, kRunFloats> kSpanSecond =
    span_masks<L>(L == 16 ? 1 : 0, L == 16 ? 0 : kRowFloats, std::make_index_sequence<L>{});

// base[offsets[l] + i * width + j] += dd[i * N + j] (lane l) for i, j < N, a run of lanes
// (windows M apart) at a time; each run's rows are added as kRunFloats floats from its first
// lane's window on, the floats past the run's windows getting zero, so kRunFloats floats from
// offsets[first] + (N - 1) * width must lie in the caller's part of base.
template <int L, int M, int N>
inline void scatter_add_windows(const Lanes<L>* dd, const int* offsets, const Runs<L>& runs,
                                int width, float* base) {
  constexpr int kRows = kRowsPerVector<L>;
  constexpr int kBlocks = (N + kRows - 1) / kRows;
  for (int k = 0; k < kBlocks; ++k) {
    Lanes<L> m[L];
    for (int c = 0; c < L; ++c) {
      const int i = kRows * k + c / kRowFloats, j = c % kRowFloats;
      m[c] = i < N && j < N ? dd[i * N + j] : Lanes<L>{};
    }
    transpose<L>(m);
    for (int r = 0; r < runs.count; ++r) {
      const int first = runs.first[r];
      Lanes<L> one{}, two{};
      for (int q = 0; q < runs.length[r]; ++q) {
        one += __builtin_shuffle(m[first + q], Lanes<L>{}, kSpanFirst<L>[M * q]);
        two += __builtin_shuffle(m[first + q], Lanes<L>{}, kSpanSecond<L>[M * q]);
      }
      float* dst = base + offsets[first] + kRows * k * width;
      store_lanes<L>(dst, load_lanes<L>(dst) + one);
      // 16 lanes: the next window row; 8 lanes: the rest of this one.
      float* next = kRows == 2 ? dst + width : dst + kRowFloats;
      if (kRows == 1 || 2 * k + 1 < N) store_lanes<L>(next, load_lanes<L>(next) + two);
    }
  }
}

// Output tiles (M x M) of a run of side-by-side lanes: the run's row i is M * length floats,
// float M q + j coming from lane first + q of y[i * M + j]. A pick takes two vectors, so the row
// is built a column at a time: columns 0 and 1 from y[i * M] and y[i * M + 1], then each further
// column into the row so far (M - 1 picks, one for M = 2).
constexpr int interleave_pick(int lanes, int m, int first, int column, int p) {
  const int lane = first + p / m < lanes ? first + p / m : lanes - 1;
  if (p % m == column) return lanes + lane;
  return column == 1 ? lane : p;
}
template <int L, int M, std::size_t... kLane>
constexpr std::array<std::array<LaneIndex<L>, M>, L> interleave_masks(
    std::index_sequence<kLane...>) {
  std::array<std::array<LaneIndex<L>, M>, L> m{};
  for (int first = 0; first < L; ++first) {
    for (int column = 1; column < M; ++column) {
      m[first][column] =
          LaneIndex<L>{interleave_pick(L, M, first, column, static_cast<int>(kLane))...};
    }
  }
  return m;
}
template <int L, int M>
inline constexpr std::array<std::array<LaneIndex<L>, M>, L> kInterleave =
    interleave_masks<L, M>(std::make_index_sequence<L>{});

// Row i of the run starting at lane `first` (its first M * length floats; the rest is filler).
template <int L, int M>
inline Lanes<L> run_row(const Lanes<L>* y, int i, int first) {
  const auto& masks = kInterleave<L, M>[first];
  Lanes<L> row = __builtin_shuffle(y[M * i], y[M * i + 1], masks[1]);
  for (int column = 2; column < M; ++column) {
    row = __builtin_shuffle(row, y[M * i + column], masks[column]);
  }
  return row;
}

// The inverse's lane picks: lanes first .. first + length - 1 of column j take floats j, M + j,
// ... of a run's row, the other lanes zero (pick L of a zero vector).
template <int L, int M>
inline LaneIndex<L> run_column_mask(int first, int length, int j) {
  constexpr LaneIndex<L> lane = lane_numbers<L>(std::make_index_sequence<L>{});
  const LaneIndex<L> pick = M * (lane - first) + j;
  return (lane >= first && lane < first + length) ? pick : LaneIndex<L>{} + L;
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
