#include "backend/cpu/conv2d_winograd_weights.hpp"

#include <algorithm>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

// A block of kCo x kCi sums, L of them in all, so that one pass of lane_sums adds up the block:
// 4 x 4 with 16 lanes (16 accumulators, 4 + 1 operands of 32 registers), 2 x 4 with 8 (8 + 5 of
// 16).
template <int L>
struct SumBlock;
template <>
struct SumBlock<16> {
  static constexpr int kCo = 4, kCi = 4;
};
template <>
struct SumBlock<8> {
  static constexpr int kCo = 2, kCi = 4;
};

template <int L, std::size_t... kLane, typename Pick>
constexpr LaneIndex<L> picks(Pick pick, std::index_sequence<kLane...>) {
  return LaneIndex<L>{pick(static_cast<int>(kLane))...};
}

// One halving stage of lane_sums: vectors of S sums in progress, each over h = L / S lanes, paired
// into vectors of 2S sums over h / 2 lanes; output sum j (lanes j * h / 2 on) takes sum j % S of
// the pair's first (j < S) or second vector, its first half (kSecond false) or second half.
template <int L, int S, bool kSecond>
constexpr LaneIndex<L> halving_pick() {
  return picks<L>(
      [](int o) {
        const int h = L / S, q = h / 2, j = o / q, r = o % q;
        return (j / S) * L + (j % S) * h + (kSecond ? q : 0) + r;
      },
      std::make_index_sequence<L>{});
}

template <int L, int S>
[[gnu::always_inline]] inline void halve(Lanes<L>* v, int count) {
  constexpr LaneIndex<L> first = halving_pick<L, S, false>();
  constexpr LaneIndex<L> second = halving_pick<L, S, true>();
  for (int k = 0; k < count / 2; ++k) {
    const Lanes<L> a = v[2 * k], b = v[2 * k + 1];
    v[k] = __builtin_shuffle(a, b, first) + __builtin_shuffle(a, b, second);
  }
}

// Lane i of the result: the sum of v[i]'s L lanes, added pairwise (lane l to lane l + L / 2,
// and so on) in one fixed order. v is overwritten.
template <int L>
[[gnu::always_inline]] inline Lanes<L> lane_sums(Lanes<L>* v) {
  halve<L, 1>(v, L);
  halve<L, 2>(v, L / 2);
  halve<L, 4>(v, L / 4);
  if constexpr (L == 16) halve<L, 8>(v, 2);
  return v[0];
}

// The block's sums over the tiles, lane by lane (acc[i * kCi + j]: dm row i, v row j).
template <int L, int kCo, int kCi>
[[gnu::always_inline]] inline void block_sums(const float* dm, const float* v, const TileRuns& runs,
                                              Lanes<L>* acc) {
  const std::size_t tiles = runs.tiles;
  for (int e = 0; e < kCo * kCi; ++e) acc[e] = Lanes<L>{};
  for (int k = 0; k < runs.runs; ++k) {
    const float* const dm_run = dm + k * runs.run_stride;
    const float* const v_run = v + k * runs.run_stride;
    for (std::size_t t = 0; t < tiles; t += L) {
      Lanes<L> b[kCi];
      for (int j = 0; j < kCi; ++j) b[j] = load_lanes<L>(v_run + j * tiles + t);
      for (int i = 0; i < kCo; ++i) {
        const Lanes<L> a = load_lanes<L>(dm_run + i * tiles + t);
        for (int j = 0; j < kCi; ++j) acc[i * kCi + j] += a * b[j];
      }
    }
  }
}

template <int L>
void weight_product(int cout, int cin, const float* dm, const float* v, const TileRuns& runs,
                    float* du) {
  const std::size_t tiles = runs.tiles;
  constexpr int kCo = SumBlock<L>::kCo, kCi = SumBlock<L>::kCi;
  for (int co = 0; co < cout; co += kCo) {
    for (int ci = 0; ci < cin; ci += kCi) {
      const float* a = dm + co * tiles;
      const float* b = v + ci * tiles;
      Lanes<L> acc[L];
      if (co + kCo <= cout && ci + kCi <= cin) {
        block_sums<L, kCo, kCi>(a, b, runs, acc);
        const Lanes<L> sums = lane_sums<L>(acc);
        for (int i = 0; i < kCo; ++i)
          for (int j = 0; j < kCi; ++j) du[(co + i) * cin + ci + j] = sums[i * kCi + j];
        continue;
      }
      // A block cut by the channel counts: a row of kCi sums at a time where the input
      // channels fill the block (kCi chains of multiply-adds in flight; LeNet's 50 output
      // channels leave 2 rows with 16 lanes), else one sum; their lanes added as above.
      for (int i = co; i < std::min(cout, co + kCo); ++i) {
        if (ci + kCi <= cin) {
          block_sums<L, 1, kCi>(dm + i * tiles, b, runs, acc);
          for (int e = kCi; e < L; ++e) acc[e] = Lanes<L>{};
          const Lanes<L> sums = lane_sums<L>(acc);
          for (int j = 0; j < kCi; ++j) du[i * cin + ci + j] = sums[j];
          continue;
        }
        for (int j = ci; j < cin; ++j) {
          block_sums<L, 1, 1>(dm + i * tiles, v + j * tiles, runs, acc);
          for (int e = 1; e < L; ++e) acc[e] = Lanes<L>{};
          du[i * cin + j] = lane_sums<L>(acc)[0];
        }
      }
    }
  }
}

}  // namespace

void lanes_weight_product(int lanes, int cout, int cin, const float* dm, const float* v,
                          const TileRuns& tiles, float* du) {
  by_width(lanes, [&](auto l) { weight_product<decltype(l)::value>(cout, cin, dm, v, tiles, du); });
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
