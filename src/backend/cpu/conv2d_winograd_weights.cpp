#include "backend/cpu/conv2d_winograd_weights.hpp"

#include <algorithm>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

// A block of kCo x kCi sums kept in registers (their lanes added by add_lanes). 16 lanes: 4 x 4
// (16 accumulators, 4 + 1 operands of 32 registers). 8 lanes: 3 x 4, dM's 3 vectors held and V's
// taken one at a time (12 accumulators + 3 + 1 operands of 16 registers): a multiply-add's latency
// times a Zen 2 or Skylake core's two FMA pipes is 8 to 10 sums in flight, which a 2 x 4 block
// left short of. The operands are held in registers (keep_in_register). One position's product,
// one thread, 8 lanes, Zen 2, min us, 2 x 4 with operands from memory -> 3 x 4: 16 channels x 256
// tiles (ResNet-20's first stage) 2.0 -> 1.9, 32 x 128 4.4 -> 4.3, 64 x 128 18.5 -> 17.4, LeNet's
// 50 x 20 x 512 40.6 -> 32.4. Each sum runs over its tiles lane by lane in the same order
// whatever block holds it, so the block's shape changes no bit.
template <int L>
struct SumBlock;
template <>
struct SumBlock<16> {
  static constexpr int kCo = 4, kCi = 4, kSums = kCo * kCi;
};
template <>
struct SumBlock<8> {
  static constexpr int kCo = 3, kCi = 4, kSums = kCo * kCi;
};

template <int L, std::size_t... kLane, typename Pick>
constexpr LaneIndex<L> picks(Pick pick, std::index_sequence<kLane...>) {
  return LaneIndex<L>{pick(static_cast<int>(kLane))...};
}

// One halving stage of add_lanes: vectors of S sums in progress, each over h = L / S lanes, paired
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

// One halving stage over n vectors (a zero vector appended where n is odd; v holds n + 1);
// returns the vectors left.
template <int L, int S>
[[gnu::always_inline]] inline int halve_all(Lanes<L>* v, int n) {
  if (n % 2 != 0) v[n++] = Lanes<L>{};
  halve<L, S>(v, n);
  return n / 2;
}

// sums[i] = the sum of v[i]'s L lanes for i < count, added pairwise (lane l to lane l + L / 2,
// and so on) in one fixed order, whatever count is: each vector's lanes meet only each other.
// v holds count + 1 vectors and is overwritten.
template <int L>
[[gnu::always_inline]] inline void add_lanes(Lanes<L>* v, int count, float* sums) {
  int n = halve_all<L, 1>(v, count);
  n = halve_all<L, 2>(v, n);
  n = halve_all<L, 4>(v, n);
  if constexpr (L == 16) n = halve_all<L, 8>(v, n);
  for (int i = 0; i < count; ++i) sums[i] = v[i / L][i % L];
}

// The block's sums over the tiles, lane by lane (acc[i * kCi + j]: dm row i, v row j): dM's kCo
// vectors held, V's taken one at a time.
template <int L, int kCo, int kCi>
[[gnu::always_inline]] inline void block_sums(const float* dm, const float* v, const TileRuns& runs,
                                              Lanes<L>* acc) {
  const std::size_t tiles = runs.tiles;
  for (int e = 0; e < kCo * kCi; ++e) acc[e] = Lanes<L>{};
  for (int k = 0; k < runs.runs; ++k) {
    const float* const dm_run = dm + k * runs.run_stride;
    const float* const v_run = v + k * runs.run_stride;
    for (std::size_t t = 0; t < tiles; t += L) {
      Lanes<L> a[kCo];
      for (int i = 0; i < kCo; ++i) {
        a[i] = load_lanes<L>(dm_run + i * tiles + t);
        keep_in_register<L>(a[i]);
      }
      for (int j = 0; j < kCi; ++j) {
        Lanes<L> b = load_lanes<L>(v_run + j * tiles + t);
        keep_in_register<L>(b);
        for (int i = 0; i < kCo; ++i) acc[i * kCi + j] += a[i] * b;
      }
    }
  }
}

// Room for any block's sums and add_lanes's padding.
template <int L>
constexpr int kMostSums = SumBlock<L>::kSums + 1;

// du's rows [co, co + kRows) over the input channels: kCols of them at a time, then one at a time.
template <int L, int kRows, int kCols>
void row_sums(int co, int cin, const float* dm, const float* v, const TileRuns& runs, float* du) {
  static_assert(kRows * kCols < kMostSums<L>, "the block's sums and padding fit acc");
  const std::size_t tiles = runs.tiles;
  Lanes<L> acc[kMostSums<L>];
  float sums[kMostSums<L>];
  int ci = 0;
  for (; ci + kCols <= cin; ci += kCols) {
    block_sums<L, kRows, kCols>(dm + co * tiles, v + ci * tiles, runs, acc);
    add_lanes<L>(acc, kRows * kCols, sums);
    for (int i = 0; i < kRows; ++i)
      for (int j = 0; j < kCols; ++j) du[(co + i) * cin + ci + j] = sums[i * kCols + j];
  }
  for (int i = co; i < co + kRows; ++i) {
    for (int j = ci; j < cin; ++j) {
      block_sums<L, 1, 1>(dm + i * tiles, v + j * tiles, runs, acc);
      add_lanes<L>(acc, 1, sums);
      du[i * cin + j] = sums[0];
    }
  }
}

// The output channels in blocks of kCo rows; the rows left (fewer than kCo) in a block of their
// own as wide as keeps 8 sums in flight: LeNet's 50 channels leave 2 rows with 8 lanes, ResNet's
// 16, 32 and 64 leave 1 or 2.
template <int L>
void weight_product(int cout, int cin, const float* dm, const float* v, const TileRuns& runs,
                    float* du) {
  constexpr int kCo = SumBlock<L>::kCo, kCi = SumBlock<L>::kCi;
  int co = 0;
  for (; co + kCo <= cout; co += kCo) row_sums<L, kCo, kCi>(co, cin, dm, v, runs, du);
  switch (cout - co) {
    case 3:
      return row_sums<L, 3, 4>(co, cin, dm, v, runs, du);
    case 2:
      return row_sums<L, 2, 4>(co, cin, dm, v, runs, du);
    case 1:
      return row_sums<L, 1, 8>(co, cin, dm, v, runs, du);
    default:
      return;
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
