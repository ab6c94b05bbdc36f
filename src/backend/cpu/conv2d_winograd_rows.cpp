#include "backend/cpu/conv2d_winograd_rows.hpp"

#include <cstddef>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

constexpr int kN = Matrices<3>::n;  // 4: a tile's input rows and columns
constexpr int kM = kTileOutputs;    // 2: its output rows and columns

template <int L, typename Pick, std::size_t... kLane>
constexpr LaneIndex<L> mask_of(Pick pick, std::index_sequence<kLane...>) {
  return LaneIndex<L>{pick(static_cast<int>(kLane))...};
}
template <int L, typename Pick>
constexpr LaneIndex<L> mask_of(Pick pick) {
  return mask_of<L>(pick, std::make_index_sequence<L>{});
}

// Lane picks for a group of L tiles in rows of kCols (indices >= L pick from the second vector):
// a row pair's even and odd floats (the tiles' columns 1 and 2), each lane from its left or right
// neighbour in the same tile row (zero, from a zero vector, at the row's ends), and the inverse of
// the first: even and odd floats back into the pair's first and second vector.
template <int L, int kCols>
struct Picks {
  static constexpr LaneIndex<L> even = mask_of<L>([](int t) { return 2 * t; });
  static constexpr LaneIndex<L> odd = mask_of<L>([](int t) { return 2 * t + 1; });
  static constexpr LaneIndex<L> from_left =
      mask_of<L>([](int t) { return t % kCols == 0 ? L : t - 1; });
  static constexpr LaneIndex<L> from_right =
      mask_of<L>([](int t) { return t % kCols == kCols - 1 ? L : t + 1; });
  static constexpr LaneIndex<L> first_half =
      mask_of<L>([](int f) { return f % 2 == 0 ? f / 2 : L + f / 2; });
  static constexpr LaneIndex<L> second_half =
      mask_of<L>([](int f) { return f % 2 == 0 ? (f + L) / 2 : L + (f + L) / 2; });
};

// Where a lane group's kSegs tile rows read or write their kRows rows of a plane (input rows from
// 2 * tile_row - pad_top, or output rows from 2 * tile_row: `above` rows above it; null outside
// the plane or past the chunk), for channel 0 of planes of `channels`, from `base`, the chunk's
// first sample; and whether each row already holds an earlier tile row's part (the two rows
// consecutive tile rows share: a gradient adds to them).
template <int L, int kSegs, typename T, int kRows>
struct GroupRows {
  T* row[kRows][kSegs];
  bool shared[kRows][kSegs];
  GroupRows(const Conv2dGeometry& g, const Chunk& c, std::size_t first, int channels, int above,
            T* base) {
    constexpr int kCols = L / kSegs;
    const int tile_rows = (g.out_height + 1) / 2;
    const std::size_t per_sample = static_cast<std::size_t>(tile_rows) * kCols;
    const std::size_t chunk_tiles = per_sample * c.samples;
    const std::size_t sample_floats =
        static_cast<std::size_t>(channels) * g.out_height * g.out_width;
    for (int s = 0; s < kSegs; ++s) {
      const std::size_t tile = first + static_cast<std::size_t>(s) * kCols;
      const int tile_row = static_cast<int>(tile % per_sample) / kCols;
      for (int k = 0; k < kRows; ++k) {
        const int r = 2 * tile_row - above + k;
        const bool in = tile < chunk_tiles && r >= 0 && r < g.out_height;
        row[k][s] = in ? base + tile / per_sample * sample_floats + r * g.out_width : nullptr;
        shared[k][s] = k < kRows - 2 && tile_row > 0;
      }
    }
  }
};

template <int L>
using Half = Lanes<L / 2>;

template <int L>
Lanes<L> load_or_zero(const float* p) {
  return p != nullptr ? load_lanes<L>(p) : Lanes<L>{};
}

// The row pair of one input row of every tile row of a group (lo: floats 0 to L - 1).
template <int L, int kSegs>
void load_pair(const float* const* rows, std::size_t offset, Lanes<L>& lo, Lanes<L>& hi) {
  const auto at = [&](int s) { return rows[s] != nullptr ? rows[s] + offset : nullptr; };
  if constexpr (kSegs == 1) {
    lo = load_or_zero<L>(at(0));
    hi = rows[0] != nullptr ? load_lanes<L>(at(0) + L) : Lanes<L>{};
  } else if constexpr (kSegs == 2) {
    lo = load_or_zero<L>(at(0));
    hi = load_or_zero<L>(at(1));
  } else {
    static_assert(kSegs == 4 && L == 16, "four tile rows per group only with 16 lanes");
    const auto join = [](Half<L> a, Half<L> b) {
      return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    };
    lo = join(load_or_zero<L / 2>(at(0)), load_or_zero<L / 2>(at(1)));
    hi = join(load_or_zero<L / 2>(at(2)), load_or_zero<L / 2>(at(3)));
  }
}

template <int W>
void put(float* p, bool add, Lanes<W> v) {
  store_lanes<W>(p, add ? load_lanes<W>(p) + v : v);
}

// Tile row s's part of a row pair into its plane row: added where the row is shared, else stored.
template <int L, int kSegs>
void put_segment(float* row, bool shared, int s, Lanes<L> lo, Lanes<L> hi) {
  if (row == nullptr) return;
  if constexpr (kSegs == 1) {
    put<L>(row, shared, lo);
    put<L>(row + L, shared, hi);
  } else if constexpr (kSegs == 2) {
    put<L>(row, shared, s == 0 ? lo : hi);
  } else {
    const Lanes<L> v = s < 2 ? lo : hi;
    const Half<L> part = s % 2 == 0 ? __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
                                    : __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    put<L / 2>(row, shared, part);
  }
}

template <typename T>
T* domain_at(T* a, int p, int channels, int channel, const Chunk& c, std::size_t first) {
  return a + (static_cast<std::size_t>(p) * channels + channel) * c.tiles + first;
}

template <int L, int kSegs>
void inputs_rows(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  const float* x0 = x + static_cast<std::size_t>(c.first_sample) * plane * g.in_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, kSegs, const float, kN> rows(g, c, first, g.in_channels, g.pad_top, x0);
    for (int ci = 0; ci < g.in_channels; ++ci) {
      Lanes<L> d[kN * 2], t[kN * 2], h[kN * kN], out[kN * kN];
      for (int k = 0; k < kN; ++k)
        load_pair<L, kSegs>(rows.row[k], ci * plane, d[2 * k], d[2 * k + 1]);
      // Bt d on the row pairs, then each tile's columns 0 to 3 and d Btt, as input_transform.
      left<kN, kN, 2, kN, 1>(kMatrices<3>.bt, d, t);
      for (int i = 0; i < kN; ++i) {
        const Lanes<L> even = __builtin_shuffle(t[2 * i], t[2 * i + 1], P::even);
        const Lanes<L> odd = __builtin_shuffle(t[2 * i], t[2 * i + 1], P::odd);
        h[i * kN] = __builtin_shuffle(odd, Lanes<L>{}, P::from_left);
        h[i * kN + 1] = even;
        h[i * kN + 2] = odd;
        h[i * kN + 3] = __builtin_shuffle(even, Lanes<L>{}, P::from_right);
      }
      right<kN, kN, kN, kN, 1>(kMatrices<3>.bt, h, out);
      for (int p = 0; p < kN * kN; ++p) {
        store_lanes<L>(domain_at(v, p, g.in_channels, ci, c, first), out[p]);
      }
    }
  }
}

template <int L, int kSegs>
void gradients_rows(const Conv2dGeometry& g, const Chunk& c, const float* dv, float* dx) {
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  float* dx0 = dx + static_cast<std::size_t>(c.first_sample) * plane * g.in_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, kSegs, float, kN> rows(g, c, first, g.in_channels, g.pad_top, dx0);
    for (int ci = 0; ci < g.in_channels; ++ci) {
      Lanes<L> t[kN * kN], dd[kN * kN], lo[kN], hi[kN];
      for (int p = 0; p < kN * kN; ++p) {
        t[p] = load_lanes<L>(domain_at(dv, p, g.in_channels, ci, c, first));
      }
      input_transform_adjoint<3>(t, dd);
      // Row i of each tile: its columns 1 and 2 are the row's even and odd floats, to which the
      // left neighbour's column 3 and the right neighbour's column 0 add.
      for (int i = 0; i < kN; ++i) {
        const Lanes<L>* r = dd + i * kN;
        const Lanes<L> even = r[1] + __builtin_shuffle(r[3], Lanes<L>{}, P::from_left);
        const Lanes<L> odd = r[2] + __builtin_shuffle(r[0], Lanes<L>{}, P::from_right);
        lo[i] = __builtin_shuffle(even, odd, P::first_half);
        hi[i] = __builtin_shuffle(even, odd, P::second_half);
      }
      // Tile rows in order, so that a shared row holds the tile row above's part.
      for (int s = 0; s < kSegs; ++s) {
        for (int i = 0; i < kN; ++i) {
          float* row = rows.row[i][s] != nullptr ? rows.row[i][s] + ci * plane : nullptr;
          put_segment<L, kSegs>(row, rows.shared[i][s], s, lo[i], hi[i]);
        }
      }
    }
  }
}

template <int L, int kSegs>
void outputs_rows(const Conv2dGeometry& g, const Chunk& c, const float* m, const float* bias,
                  float* y) {
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    // y starts at the chunk's first sample.
    const GroupRows<L, kSegs, float, kM> rows(g, c, first, g.out_channels, 0, y);
    for (int co = 0; co < g.out_channels; ++co) {
      Lanes<L> t[kN * kN], out[kM * kM];
      for (int p = 0; p < kN * kN; ++p) {
        t[p] = load_lanes<L>(domain_at(m, p, g.out_channels, co, c, first));
      }
      output_transform<3>(t, out);
      for (Lanes<L>& v : out) v += bias[co];
      // Row i of each tile: its columns 0 and 1 are the row's even and odd floats.
      for (int s = 0; s < kSegs; ++s) {
        for (int i = 0; i < kM; ++i) {
          if (rows.row[i][s] == nullptr) continue;
          const Lanes<L> lo = __builtin_shuffle(out[i * kM], out[i * kM + 1], P::first_half);
          const Lanes<L> hi = __builtin_shuffle(out[i * kM], out[i * kM + 1], P::second_half);
          put_segment<L, kSegs>(rows.row[i][s] + co * plane, false, s, lo, hi);
        }
      }
    }
  }
}

template <int L, int kSegs>
void output_gradients_rows(const Conv2dGeometry& g, const Chunk& c, const float* dy, float* dm) {
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  const float* dy0 = dy + static_cast<std::size_t>(c.first_sample) * plane * g.out_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, kSegs, const float, kM> rows(g, c, first, g.out_channels, 0, dy0);
    for (int co = 0; co < g.out_channels; ++co) {
      Lanes<L> d[kM * kM], t[kN * kN];
      for (int i = 0; i < kM; ++i) {
        Lanes<L> lo, hi;
        load_pair<L, kSegs>(rows.row[i], co * plane, lo, hi);
        // Added to zero as the tiles' code does, for the same bits (a -0 becomes +0).
        d[i * kM] = Lanes<L>{} + __builtin_shuffle(lo, hi, P::even);
        d[i * kM + 1] = Lanes<L>{} + __builtin_shuffle(lo, hi, P::odd);
      }
      output_transform_adjoint<3>(d, t);
      for (int p = 0; p < kN * kN; ++p) {
        store_lanes<L>(domain_at(dm, p, g.out_channels, co, c, first), t[p]);
      }
    }
  }
}

// call(l, s) with integral constants for the lanes and the tile rows per lane group.
template <typename Call>
void by_group(const Conv2dGeometry& g, int lanes, Call call) {
  by_width(lanes, [&](auto l) {
    constexpr int L = decltype(l)::value;
    const int segs = L / (g.out_width / 2);
    if (segs == 1) return call(l, std::integral_constant<int, 1>{});
    if (segs == 2) return call(l, std::integral_constant<int, 2>{});
    if constexpr (L == 16) call(l, std::integral_constant<int, 4>{});
  });
}

}  // namespace

bool rows_apply(const Conv2dGeometry& g, int lanes) {
  if (g.kernel_height != 3 || g.kernel_width != 3 || g.pad_top != 1 || g.pad_left != 1 ||
      g.in_height != g.out_height || g.in_width != g.out_width || g.out_width % 2 != 0 ||
      g.out_width < 2) {
    return false;
  }
  const int cols = g.out_width / 2;
  if (lanes % cols != 0) return false;
  const int segs = lanes / cols;
  return segs == 1 || segs == 2 || (segs == 4 && lanes == 16);
}

void inputs_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  by_group(g, c.lanes, [&](auto l, auto s) {
    inputs_rows<decltype(l)::value, decltype(s)::value>(g, c, x, v);
  });
}

void input_gradients_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                      float* dx) {
  by_group(g, c.lanes, [&](auto l, auto s) {
    gradients_rows<decltype(l)::value, decltype(s)::value>(g, c, dv, dx);
  });
}

void outputs_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* m,
                              const float* bias, float* y) {
  by_group(g, c.lanes, [&](auto l, auto s) {
    outputs_rows<decltype(l)::value, decltype(s)::value>(g, c, m, bias, y);
  });
}

void output_gradients_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                     float* dm) {
  by_group(g, c.lanes, [&](auto l, auto s) {
    output_gradients_rows<decltype(l)::value, decltype(s)::value>(g, c, dy, dm);
  });
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
