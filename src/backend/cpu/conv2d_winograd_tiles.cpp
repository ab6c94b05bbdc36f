#include "backend/cpu/conv2d_winograd_tiles.hpp"

#include <algorithm>
#include <type_traits>

#include "backend/cpu/conv2d_winograd_lanes.hpp"
#include "backend/cpu/conv2d_winograd_rows.hpp"
#include "backend/cpu/conv2d_winograd_tile_lanes.hpp"
#include "backend/cpu/conv2d_winograd_transforms.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

namespace {

using namespace tile_lanes;

template <int L, int M, int R>
void inputs_to_domain_r(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  constexpr int n = Matrices<M, R>::n;
  const std::size_t plane = static_cast<std::size_t>(g.in_height) * g.in_width;
  const std::size_t sample_floats = plane * g.in_channels;
  const float* x0 = x + static_cast<std::size_t>(c.first_sample) * sample_floats;
  // Whole rows may be read while the last one ends inside the batch's x.
  const std::ptrdiff_t readable =
      static_cast<std::ptrdiff_t>((g.batch - c.first_sample) * sample_floats) -
      ((n - 1) * g.in_width + kRowFloats);
  Staging<L, n, n> s;
  Lanes<L> d[n * n], t[n * n];
  alignas(64) int offsets[L];
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const LaneTiles<L> l = lanes_at<L, M>(g, c, first);
    const int last = interior_offsets<L, n, n>(l, c.first_sample, sample_floats, g.pad_top,
                                               g.pad_left, g.in_height, g.in_width, offsets);
    for (int ci = 0; ci < g.in_channels; ++ci) {
      if (last >= 0 && last + static_cast<std::ptrdiff_t>(ci * plane) <= readable) {
        gather_windows<L, n>(x0 + ci * plane, offsets, g.in_width, d);
      } else {
        for (int lane = 0; lane < L; ++lane) {
          if (l.sample[lane] < 0) {
            s.zero(lane);
          } else {
            s.gather(plane_of(x, l.sample[lane], g.in_channels, ci, plane), g.in_height, g.in_width,
                     l.out_row[lane] - g.pad_top, l.out_col[lane] - g.pad_left, lane);
          }
        }
        s.load(d);
      }
      input_transform<M, R>(d, t);
      store_domain<L, n * n>(t, g.in_channels, ci, c, first, v);
    }
  }
}

// Runs of side-by-side output tiles lying wholly inside their plane, at most L / M tiles (a
// run's row fits one lane vector).
template <int L, int M>
Runs<L> output_runs(const Conv2dGeometry& g, const LaneTiles<L>& l) {
  return side_by_side_runs<L, M>(l, L / M, [&](int lane) {
    return l.sample[lane] >= 0 && l.out_row[lane] + M <= g.out_height &&
           l.out_col[lane] + M <= g.out_width;
  });
}

template <int L, int M, int R>
void outputs_from_domain_r(const Conv2dGeometry& g, const Chunk& c, const float* m,
                           const float* bias, float* y) {
  constexpr int n = Matrices<M, R>::n;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  Staging<L, M, M> s;
  Lanes<L> t[n * n], out[M * M];
  alignas(64) float row[L];
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const LaneTiles<L> l = lanes_at<L, M>(g, c, first);
    const Runs<L> runs = output_runs<L, M>(g, l);
    for (int co = 0; co < g.out_channels; ++co) {
      load_domain<L, n * n>(m, g.out_channels, co, c, first, t);
      output_transform<M, R>(t, out);
      for (Lanes<L>& v : out) v += bias[co];
      bool staged = false;
      for (int r = 0; r < runs.count; ++r) {
        const int lane = runs.first[r];
        if (l.sample[lane] < 0) break;
        float* dst = plane_of(y, l.sample[lane] - c.first_sample, g.out_channels, co, plane) +
                     l.out_row[lane] * g.out_width + l.out_col[lane];
        if (runs.length[r] > 0) {
          const int count = M * runs.length[r];
          for (int i = 0; i < M; ++i) {
            store_lanes<L>(row, run_row<L, M>(out, i, lane));
            copy_short_row(row, count, dst + i * g.out_width);
          }
          continue;
        }
        if (!staged) {
          s.store(out);
          staged = true;
        }
        const int rows = std::min(M, g.out_height - l.out_row[lane]);
        const int cols = std::min(M, g.out_width - l.out_col[lane]);
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) dst[i * g.out_width + j] = s.at(i, j, lane);
      }
    }
  }
}

template <int L, int M, int R>
void output_gradients_to_domain_r(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                  float* dm) {
  constexpr int n = Matrices<M, R>::n;
  const std::size_t plane = static_cast<std::size_t>(g.out_height) * g.out_width;
  const float* dy_end = dy + static_cast<std::size_t>(g.batch) * g.out_channels * plane;
  Staging<L, M, M> s;
  Lanes<L> d[M * M], t[n * n];
  LaneIndex<L> masks[L][M];
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const LaneTiles<L> l = lanes_at<L, M>(g, c, first);
    const Runs<L> runs = output_runs<L, M>(g, l);
    for (int r = 0; r < runs.count; ++r)
      for (int j = 0; j < M; ++j)
        masks[r][j] = run_column_mask<L, M>(runs.first[r], runs.length[r], j);
    for (int co = 0; co < g.out_channels; ++co) {
      bool staged = false;
      for (Lanes<L>& v : d) v = Lanes<L>{};
      for (int r = 0; r < runs.count; ++r) {
        const int lane = runs.first[r];
        if (l.sample[lane] < 0) break;
        const float* src = plane_of(dy, l.sample[lane], g.out_channels, co, plane) +
                           l.out_row[lane] * g.out_width + l.out_col[lane];
        // A run's rows are read as whole lane vectors while those stay inside dy.
        if (runs.length[r] > 0 && dy_end - src >= (M - 1) * g.out_width + L) {
          for (int i = 0; i < M; ++i) {
            const Lanes<L> row_values = load_lanes<L>(src + i * g.out_width);
            for (int j = 0; j < M; ++j) {
              d[i * M + j] += __builtin_shuffle(row_values, Lanes<L>{}, masks[r][j]);
            }
          }
          continue;
        }
        if (!staged) {
          for (int other = 0; other < L; ++other) s.zero(other);
          staged = true;
        }
        for (int q = 0; q < std::max(runs.length[r], 1); ++q) {
          s.gather(plane_of(dy, l.sample[lane + q], g.out_channels, co, plane), g.out_height,
                   g.out_width, l.out_row[lane + q], l.out_col[lane + q], lane + q);
        }
      }
      if (staged) {
        Lanes<L> e[M * M];
        s.load(e);
        for (int k = 0; k < M * M; ++k) d[k] += e[k];
      }
      output_transform_adjoint<M, R>(d, t);
      store_domain<L, n * n>(t, g.out_channels, co, c, first, dm);
    }
  }
}

template <int L, int M, int R>
void input_gradients_from_domain_r(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                   float* dx) {
  constexpr int n = Matrices<M, R>::n;
  const int height = g.in_height, width = g.in_width;
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  const std::size_t sample_floats = plane * g.in_channels;
  float* chunk_dx = dx + static_cast<std::size_t>(c.first_sample) * sample_floats;
  const std::size_t chunk_floats = static_cast<std::size_t>(c.samples) * sample_floats;
  std::fill(chunk_dx, chunk_dx + chunk_floats, 0.0f);
  // A run's rows may be added as kRunFloats floats while the last ends inside the chunk's dx: other
  // tasks write the other chunks.
  const std::ptrdiff_t writable =
      static_cast<std::ptrdiff_t>(chunk_floats) - ((n - 1) * width + kRunFloats);
  Staging<L, n, n> s;
  Lanes<L> t[n * n], dd[n * n];
  alignas(64) int offsets[L];
  for (std::size_t first = 0; first < c.tiles; first += L) {
    const LaneTiles<L> l = lanes_at<L, M>(g, c, first);
    const int last = interior_offsets<L, n, n>(l, c.first_sample, sample_floats, g.pad_top,
                                               g.pad_left, height, width, offsets);
    // Used only where every lane's window lies inside its plane (interior_offsets).
    const Runs<L> runs = side_by_side_runs<L, M>(l, kMaxRun<n, M>, [](int) { return true; });
    for (int ci = 0; ci < g.in_channels; ++ci) {
      load_domain<L, n * n>(dv, g.in_channels, ci, c, first, t);
      input_transform_adjoint<M, R>(t, dd);
      if (last >= 0 && last + static_cast<std::ptrdiff_t>(ci * plane) <= writable) {
        scatter_add_windows<L, M, n>(dd, offsets, runs, width, chunk_dx + ci * plane);
        continue;
      }
      s.store(dd);
      for (int lane = 0; lane < L && l.sample[lane] >= 0; ++lane) {
        float* dst = plane_of(dx, l.sample[lane], g.in_channels, ci, plane);
        const int row = l.out_row[lane] - g.pad_top, col = l.out_col[lane] - g.pad_left;
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) {
            const int r = row + i, q = col + j;
            if (r >= 0 && r < height && q >= 0 && q < width) dst[r * width + q] += s.at(i, j, lane);
          }
      }
    }
  }
}

template <int L, int M, int R>
void filters_to_domain_r(const Conv2dGeometry& g, const float* w, std::size_t first_pair,
                         float* u) {
  constexpr int n = Matrices<M, R>::n;
  const std::size_t pairs = static_cast<std::size_t>(g.out_channels) * g.in_channels;
  const int count = static_cast<int>(std::min<std::size_t>(L, pairs - first_pair));
  Staging<L, R, R> s;
  for (int lane = 0; lane < L; ++lane) {
    if (lane >= count) {
      s.zero(lane);
      continue;
    }
    const float* filter = w + (first_pair + lane) * R * R;
    for (int e = 0; e < R * R; ++e) s.f[e * L + lane] = filter[e];
  }
  Lanes<L> in[R * R], out[n * n];
  s.load(in);
  filter_transform<M, R>(in, out);
  Staging<L, n, n> o;
  o.store(out);
  for (int p = 0; p < n * n; ++p) {
    std::copy(o.f + p * L, o.f + p * L + count, u + p * pairs + first_pair);
  }
}

// call(l, m, r) with integral constants for the chunk's lanes and the layer's F(m, r) (by_tile).
template <typename Call>
void by_shape(const Conv2dGeometry& g, int lanes, Call call) {
  by_width(lanes, [&](auto l) { by_tile(g, [&](auto m, auto r) { call(l, m, r); }); });
}

}  // namespace

int tile_outputs(const Conv2dGeometry& g) {
  int edge = 0;
  by_tile(g, [&](auto m, auto) { edge = decltype(m)::value; });
  return edge;
}

int tiles_per_sample(const Conv2dGeometry& g) {
  return tile_rows(g) * tile_cols(g);
}

void inputs_to_domain(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v) {
  if (rows_apply(g, c.lanes)) return inputs_to_domain_rows(g, c, x, v);
  by_shape(g, c.lanes, [&](auto l, auto edge, auto r) {
    inputs_to_domain_r<decltype(l)::value, decltype(edge)::value, decltype(r)::value>(g, c, x, v);
  });
}
void outputs_from_domain(const Conv2dGeometry& g, const Chunk& c, const float* m, const float* bias,
                         float* y) {
  if (rows_apply(g, c.lanes)) return outputs_from_domain_rows(g, c, m, bias, y);
  by_shape(g, c.lanes, [&](auto l, auto edge, auto r) {
    outputs_from_domain_r<decltype(l)::value, decltype(edge)::value, decltype(r)::value>(g, c, m,
                                                                                         bias, y);
  });
}
void output_gradients_to_domain(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                float* dm) {
  if (rows_apply(g, c.lanes)) return output_gradients_to_domain_rows(g, c, dy, dm);
  by_shape(g, c.lanes, [&](auto l, auto edge, auto r) {
    output_gradients_to_domain_r<decltype(l)::value, decltype(edge)::value, decltype(r)::value>(
        g, c, dy, dm);
  });
}
void input_gradients_from_domain(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                 float* dx) {
  if (rows_apply(g, c.lanes)) return input_gradients_from_domain_rows(g, c, dv, dx);
  by_shape(g, c.lanes, [&](auto l, auto edge, auto r) {
    input_gradients_from_domain_r<decltype(l)::value, decltype(edge)::value, decltype(r)::value>(
        g, c, dv, dx);
  });
}
void filters_to_domain(const Conv2dGeometry& g, int lanes, const float* w, std::size_t first_pair,
                       float* u) {
  by_shape(g, lanes, [&](auto l, auto edge, auto r) {
    filters_to_domain_r<decltype(l)::value, decltype(edge)::value, decltype(r)::value>(
        g, w, first_pair, u);
  });
}

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
