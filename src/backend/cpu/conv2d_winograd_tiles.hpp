// Moving a chunk of samples into and out of the Winograd domain (conv2d_winograd.hpp): tiles are
// numbered (sample, tile row, tile column) across the chunk and transformed `lanes` at a time (8
// or 16: conv2d_winograd_transforms.hpp), and the domain arrays hold, for each of the n^2
// positions p and each channel c, the chunk's tiles side by side: A[p * domain_stride(channels,
// tiles) + c * tiles + tile], `tiles` a multiple of `lanes` (the lanes past the chunk's last tile
// hold zeros).
#pragma once

#include <cstddef>
#include <type_traits>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/lane_vectors.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace winograd {

struct Chunk {
  int first_sample = 0, samples = 0;
  std::size_t tiles = 0;  // the domain arrays' row length
  int lanes = 0;          // tiles per lane vector, 8 or 16
};

// The output tile edge m of the layer's F(m, r): 4 for 3x3 filters, 2 for 5x5
// (conv2d_winograd_transforms.hpp says why).
int tile_outputs(const Conv2dGeometry& g);

// call(m, r) with m and r integral constants for the layer's F(m, r).
template <typename Call>
void by_tile(const Conv2dGeometry& g, Call call) {
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  using Four = std::integral_constant<int, 4>;
  using Five = std::integral_constant<int, 5>;
  if (g.kernel_height == 5) return call(Two{}, Five{});
  call(Four{}, Three{});
}

// Tiles down and across one output plane, and per sample.
int tiles_per_sample(const Conv2dGeometry& g);

// The floats from one position's block of a domain array to the next: channels x tiles, rounded
// up to an odd number of cache lines. A tile's transform stores (or loads) one vector at each of
// the n^2 positions; a whole number of 4 KiB apart (16 channels of 64 or 256 tiles, ResNet-20's
// first stage), all of them fell in one set of the L1 cache, which holds 8 or 12 lines of a set.
// An odd number of lines apart, they fall in n^2 different sets.
inline std::size_t domain_stride(int channels, std::size_t tiles) {
  constexpr std::size_t kLineFloats = 16;
  const std::size_t lines =
      (static_cast<std::size_t>(channels) * tiles + kLineFloats - 1) / kLineFloats;
  return (lines | 1) * kLineFloats;
}

// The domain arrays' loads and stores, for the tiles' path and the rows'
// (conv2d_winograd_rows.hpp): t[p] from or to A[p * domain_stride + channel * tiles + first_tile]
// for each position p.
template <int L, int kPositions>
void store_domain(const Lanes<L>* t, int channels, int channel, const Chunk& c,
                  std::size_t first_tile, float* a) {
  const std::size_t stride = domain_stride(channels, c.tiles);
  float* const at = a + static_cast<std::size_t>(channel) * c.tiles + first_tile;
  for (int p = 0; p < kPositions; ++p) store_lanes<L>(at + p * stride, t[p]);
}
template <int L, int kPositions>
void load_domain(const float* a, int channels, int channel, const Chunk& c, std::size_t first_tile,
                 Lanes<L>* t) {
  const std::size_t stride = domain_stride(channels, c.tiles);
  const float* const at = a + static_cast<std::size_t>(channel) * c.tiles + first_tile;
  for (int p = 0; p < kPositions; ++p) t[p] = load_lanes<L>(at + p * stride);
}

// V = Bt d Btt for every input tile and channel (x is the whole batch's input).
void inputs_to_domain(const Conv2dGeometry& g, const Chunk& c, const float* x, float* v);
// y = At M Att + bias for every output tile and channel (outputs past the plane's edge dropped);
// y points at the chunk's first sample's output.
void outputs_from_domain(const Conv2dGeometry& g, const Chunk& c, const float* m, const float* bias,
                         float* y);
// dM = Att dY At (dY zero past the plane's edge; dy is the whole batch's).
void output_gradients_to_domain(const Conv2dGeometry& g, const Chunk& c, const float* dy,
                                float* dm);
// dx = the sum over tiles of Btt dV Bt (padding dropped); the chunk's dx is overwritten.
void input_gradients_from_domain(const Conv2dGeometry& g, const Chunk& c, const float* dv,
                                 float* dx);
// U[p][pair] = (G w Gt)[p] for the `lanes` filter pairs (out, in) from first_pair on (fewer at
// the end); `pairs` is out_channels * in_channels.
void filters_to_domain(const Conv2dGeometry& g, int lanes, const float* w, std::size_t first_pair,
                       float* u);

}  // namespace winograd
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
