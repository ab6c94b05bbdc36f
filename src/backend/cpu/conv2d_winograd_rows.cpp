#include "backend/cpu/conv2d_winograd_rows.hpp"

#include <cstddef>
#include <utility>

#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

constexpr int kR = 3;  // the filters rows_apply admits, padded by 1
template <int M>
constexpr int kN = M + kR - 1;  // a tile's input rows and columns

template <int L, typename Pick, std::size_t... kLane>
constexpr LaneIndex<L> mask_of(Pick pick, std::index_sequence<kLane...>) {
  return LaneIndex<L>{pick(static_cast<int>(kLane))...};
}
template <int L, typename Pick>
constexpr LaneIndex<L> mask_of(Pick pick) {
  return mask_of<L>(pick, std::make_index_sequence<L>{});
}

// Lane picks for a group of L tiles in rows of kCols (indices >= L pick from the second vector):
// two vectors' even and odd floats, each lane from its left or right neighbour in the same tile
// row (zero, from a zero vector, at the row's ends), and the inverse of the first: even and odd
// floats back into the first and second vector.
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

// A plane row holds seg_floats = M * kCols floats of each of a group's kSegs tile rows: whole
// lane vectors, or half of one (16 lanes only: 8 lanes would need vectors of 4 floats).
template <int L, int M, int kSegs>
constexpr int seg_floats() {
  return M * L / kSegs;
}
template <int L, int M, int kSegs>
constexpr bool fits() {
  constexpr int f = seg_floats<L, M, kSegs>();
  return f % L == 0 || (2 * f == L && L == 16);
}

// The K phases of K lane vectors (K L consecutive floats, K a power of two): phase p is floats p,
// K + p, 2K + p, ..., a row's column p of each tile when K = M. By halving: each pair's even and
// odd floats, then the phases of the evens (the even phases) and of the odds.
template <int L, int K>
inline void to_phases(const Lanes<L>* v, Lanes<L>* phase) {
  if constexpr (K == 1) {
    phase[0] = v[0];
  } else {
    using P = Picks<L, L>;
    Lanes<L> even[K / 2], odd[K / 2], pe[K / 2], po[K / 2];
    for (int k = 0; k < K / 2; ++k) {
      even[k] = __builtin_shuffle(v[2 * k], v[2 * k + 1], P::even);
      odd[k] = __builtin_shuffle(v[2 * k], v[2 * k + 1], P::odd);
    }
    to_phases<L, K / 2>(even, pe);
    to_phases<L, K / 2>(odd, po);
    for (int p = 0; p < K / 2; ++p) {
      phase[2 * p] = pe[p];
      phase[2 * p + 1] = po[p];
    }
  }
}
// The inverse of to_phases.
template <int L, int K>
inline void from_phases(const Lanes<L>* phase, Lanes<L>* v) {
  if constexpr (K == 1) {
    v[0] = phase[0];
  } else {
    using P = Picks<L, L>;
    Lanes<L> pe[K / 2], po[K / 2], even[K / 2], odd[K / 2];
    for (int p = 0; p < K / 2; ++p) {
      pe[p] = phase[2 * p];
      po[p] = phase[2 * p + 1];
    }
    from_phases<L, K / 2>(pe, even);
    from_phases<L, K / 2>(po, odd);
    for (int k = 0; k < K / 2; ++k) {
      v[2 * k] = __builtin_shuffle(even[k], odd[k], P::first_half);
      v[2 * k + 1] = __builtin_shuffle(even[k], odd[k], P::second_half);
    }
  }
}

// Where a lane group's kSegs tile rows read or write their kRows rows of a plane (input rows from
// M * tile_row - pad_top, or output rows from M * tile_row: `above` rows above it; null outside
// the plane or past the chunk), for channel 0 of planes of `channels`, from `base`, the chunk's
// first sample; and whether each row already holds an earlier tile row's part (the kRows - M
// rows consecutive tile rows share: a gradient adds to them).
template <int L, int M, int kSegs, typename T, int kRows>
struct GroupRows {
  T* row[kRows][kSegs];
  bool shared[kRows][kSegs];
  GroupRows(const Conv2dGeometry& g, const Chunk& c, std::size_t first, int channels, int above,
            T* base) {
    constexpr int kCols = L / kSegs;
    const int tile_rows = (g.out_height + M - 1) / M;
    const std::size_t per_sample = static_cast<std::size_t>(tile_rows) * kCols;
    const std::size_t chunk_tiles = per_sample * c.samples;
    const std::size_t sample_floats =
        static_cast<std::size_t>(channels) * g.out_height * g.out_width;
    for (int s = 0; s < kSegs; ++s) {
      const std::size_t tile = first + static_cast<std::size_t>(s) * kCols;
      const int tile_row = static_cast<int>(tile % per_sample) / kCols;
      for (int k = 0; k < kRows; ++k) {
        const int r = M * tile_row - above + k;
        const bool in = tile < chunk_tiles && r >= 0 && r < g.out_height;
        row[k][s] = in ? base + tile / per_sample * sample_floats + r * g.out_width : nullptr;
        shared[k][s] = k < kRows - M && tile_row > 0;
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

// The row group of one plane row of every tile row of a group: M vectors, the tile rows' floats
// one after another.
template <int L, int M, int kSegs>
void load_group(const float* const* rows, std::size_t offset, Lanes<L>* v) {
  constexpr int kFloats = seg_floats<L, M, kSegs>();
  const auto at = [&](int s) { return rows[s] != nullptr ? rows[s] + offset : nullptr; };
  if constexpr (kFloats >= L) {
    for (int k = 0; k < M; ++k) {
      const float* p = at(k * L / kFloats);
      v[k] = p != nullptr ? load_lanes<L>(p + k * L % kFloats) : Lanes<L>{};
    }
  } else {
    for (int k = 0; k < M; ++k) {
      v[k] = __builtin_shufflevector(load_or_zero<L / 2>(at(2 * k)),
                                     load_or_zero<L / 2>(at(2 * k + 1)), 0, 1, 2, 3, 4, 5, 6, 7, 8,
                                     9, 10, 11, 12, 13, 14, 15);
    }
  }
}

template <int W>
void put(float* p, bool add, Lanes<W> v) {
  store_lanes<W>(p, add ? load_lanes<W>(p) + v : v);
}

// Tile row s's part of a row group into its plane row: added where the row is shared, else
// stored.
template <int L, int M, int kSegs>
void put_segment(float* row, bool shared, int s, const Lanes<L>* v) {
  constexpr int kFloats = seg_floats<L, M, kSegs>();
  if (row == nullptr) return;
  if constexpr (kFloats >= L) {
    constexpr int kVectors = kFloats / L;
    for (int k = 0; k < kVectors; ++k) put<L>(row + k * L, shared, v[s * kVectors + k]);
  } else {
    const Lanes<L> w = v[s / 2];
    const Half<L> part = s % 2 == 0 ? __builtin_shufflevector(w, w, 0, 1, 2, 3, 4, 5, 6, 7)
                                    : __builtin_shufflevector(w, w, 8, 9, 10, 11, 12, 13, 14, 15);
    put<L / 2>(row, shared, part);
  }
}

template <int L, int M, int kSegs>
void inputs_rows(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  constexpr int n = kN<M>;
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  const float* x0 = x + static_cast<std::size_t>(c.first_sample) * plane * g.in_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, M, kSegs, const float, n> rows(g, c, first, g.in_channels, g.pad_top, x0);
    for (int ci = 0; ci < g.in_channels; ++ci) {
      // Each tile's window, row by row: columns 1 to M are the row group's phases, 0 and n - 1
      // the neighbours'. Then input_transform itself: split into a vertical half on the row
      // groups (M vectors a row instead of n) and a horizontal one on the phases, it would save
      // a sixth of F(4, 3)'s sums, but GCC fused its products into multiply-adds differently
      // there than in the tiles' code, and with 16 lanes on 8-wide planes than with 8: y's bits
      // then depended on the lane width.
      Lanes<L> h[n * n], out[n * n];
      for (int i = 0; i < n; ++i) {
        Lanes<L> group[M], phase[M];
        load_group<L, M, kSegs>(rows.row[i], ci * plane, group);
        to_phases<L, M>(group, phase);
        h[i * n] = __builtin_shuffle(phase[M - 1], Lanes<L>{}, P::from_left);
        for (int p = 0; p < M; ++p) h[i * n + 1 + p] = phase[p];
        h[i * n + n - 1] = __builtin_shuffle(phase[0], Lanes<L>{}, P::from_right);
      }
      input_transform<M, kR>(h, out);
      store_domain<L, n * n>(out, g.in_channels, ci, c, first, v);
    }
  }
}

template <int L, int M, int kSegs>
void gradients_rows(const Conv2dGeometry& g, const Chunk& c, const float* dv, float* dx) {
  constexpr int n = kN<M>;
  using P = Picks<L, L / kSegs>;
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  float* dx0 = dx + static_cast<std::size_t>(c.first_sample) * plane * g.in_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, M, kSegs, float, n> rows(g, c, first, g.in_channels, g.pad_top, dx0);
    for (int ci = 0; ci < g.in_channels; ++ci) {
      Lanes<L> t[n * n], dd[n * n], groups[n * M];
      load_domain<L, n * n>(dv, g.in_channels, ci, c, first, t);
      input_transform_adjoint<M, kR>(t, dd);
      // Row i of each tile: its columns 1 to M are the row's phases, to which the left
      // neighbour's column n - 1 and the right neighbour's column 0 add.
      for (int i = 0; i < n; ++i) {
        const Lanes<L>* r = dd + i * n;
        Lanes<L> phase[M];
        for (int p = 0; p < M; ++p) phase[p] = r[p + 1];
        phase[0] += __builtin_shuffle(r[n - 1], Lanes<L>{}, P::from_left);
        phase[M - 1] += __builtin_shuffle(r[0], Lanes<L>{}, P::from_right);
        from_phases<L, M>(phase, groups + i * M);
      }
      // Tile rows in order, so that a shared row holds the tile row above's part.
      for (int s = 0; s < kSegs; ++s) {
        for (int i = 0; i < n; ++i) {
          float* row = rows.row[i][s] != nullptr ? rows.row[i][s] + ci * plane : nullptr;
          put_segment<L, M, kSegs>(row, rows.shared[i][s], s, groups + i * M);
        }
      }
    }
  }
}

template <int L, int M, int kSegs>
void outputs_rows(const Conv2dGeometry& g, const Chunk& c, const float* m, const float* bias,
                  float* y) {
  constexpr int n = kN<M>;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    // y starts at the chunk's first sample.
    const GroupRows<L, M, kSegs, float, M> rows(g, c, first, g.out_channels, 0, y);
    for (int co = 0; co < g.out_channels; ++co) {
      Lanes<L> t[n * n], out[M * M];
      load_domain<L, n * n>(m, g.out_channels, co, c, first, t);
      output_transform<M, kR>(t, out);
      for (Lanes<L>& v : out) v += bias[co];
      // Row i of each tile: its columns 0 to M - 1 are the row's phases.
      for (int i = 0; i < M; ++i) {
        Lanes<L> group[M];
        from_phases<L, M>(out + i * M, group);
        for (int s = 0; s < kSegs; ++s) {
          float* row = rows.row[i][s] != nullptr ? rows.row[i][s] + co * plane : nullptr;
          put_segment<L, M, kSegs>(row, false, s, group);
        }
      }
    }
  }
}

template <int L, int M, int kSegs>
void output_gradients_rows(const Conv2dGeometry& g, const Chunk& c, const float* dy, float* dm) {
  constexpr int n = kN<M>;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  const float* dy0 = dy + static_cast<std::size_t>(c.first_sample) * plane * g.out_channels;
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const GroupRows<L, M, kSegs, const float, M> rows(g, c, first, g.out_channels, 0, dy0);
    for (int co = 0; co < g.out_channels; ++co) {
      Lanes<L> d[M * M], t[n * n];
      for (int i = 0; i < M; ++i) {
        Lanes<L> group[M], phase[M];
        load_group<L, M, kSegs>(rows.row[i], co * plane, group);
        to_phases<L, M>(group, phase);
        // Added to zero as the tiles' code does, for the same bits (a -0 becomes +0).
        for (int j = 0; j < M; ++j) d[i * M + j] = Lanes<L>{} + phase[j];
      }
      output_transform_adjoint<M, kR>(d, t);
      store_domain<L, n * n>(t, g.out_channels, co, c, first, dm);
    }
  }
}

// call(l, m, s) with integral constants for the lanes, the tile edge and the tile rows per lane
// group, where rows_apply.
template <typename Call>
void by_group(const Conv2dGeometry& g, int lanes, Call call) {
  by_width(lanes, [&](auto l) {
    by_tile(g, [&](auto m, auto r) {
      constexpr int L = decltype(l)::value, M = decltype(m)::value, R = decltype(r)::value;
      const int segs = L / (g.out_width / M);
      const auto take = [&](auto s) {
        if constexpr (R == kR && fits<L, M, decltype(s)::value>()) {
          if (segs == decltype(s)::value) return call(l, m, s), true;
        }
        return false;
      };
      take(std::integral_constant<int, 1>{}) || take(std::integral_constant<int, 2>{}) ||
          take(std::integral_constant<int, 4>{}) || take(std::integral_constant<int, 8>{});
    });
  });
}

}  // namespace

bool rows_apply(const Conv2dGeometry& g, int lanes) {
  const int m = tile_outputs(g);
  if (g.kernel_height != kR || g.kernel_width != kR || g.pad_top != 1 || g.pad_left != 1 ||
      g.in_height != g.out_height || g.in_width != g.out_width || g.out_width % m != 0 ||
      g.out_width < m) {
    return false;
  }
  // A tile row's floats in a plane row: as fits().
  const int cols = g.out_width / m, floats = g.out_width;
  return lanes % cols == 0 && (floats % lanes == 0 || (2 * floats == lanes && lanes == 16));
}

void inputs_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  by_group(g, c.lanes, [&](auto l, auto edge, auto s) {
    inputs_rows<decltype(l)::value, decltype(edge)::value, decltype(s)::value>(g, c, x, v);
  });
}

void input_gradients_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                      float* dx) {
  by_group(g, c.lanes, [&](auto l, auto edge, auto s) {
    gradients_rows<decltype(l)::value, decltype(edge)::value, decltype(s)::value>(g, c, dv, dx);
  });
}

void outputs_from_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* m,
                              const float* bias, float* y) {
  by_group(g, c.lanes, [&](auto l, auto edge, auto s) {
    outputs_rows<decltype(l)::value, decltype(edge)::value, decltype(s)::value>(g, c, m, bias, y);
  });
}

void output_gradients_to_domain_rows(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                     float* dm) {
  by_group(g, c.lanes, [&](auto l, auto edge, auto s) {
    output_gradients_rows<decltype(l)::value, decltype(edge)::value, decltype(s)::value>(g, c, dy,
                                                                                         dm);
  });
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
