// The bias gradients: per-channel sums of a convolution's dy and per-column sums of a dense
// layer's dy. Both split each sum into chunks so that many blocks share one channel or column,
// and both are deterministic: the chunks, and the order of the additions inside each chunk and
// over the chunks, depend only on the problem size, never on the launch limits or the device.
//
// Order, channel sums (n = batch * spatial values per channel, read in (sample, position) order):
// value j belongs to chunk j / length. Inside a chunk, lane l of the warp that owns it (l < 32)
// adds values l, l + 32, l + 64, ... in double; the 32 lane totals are added by a fixed
// shuffle tree (lane l += lane l + 16, then + 8, + 4, + 2, + 1).
// Order, column sums: inside a chunk of rows, one thread adds its column's rows in row order, in
// double.
// Both, over the chunks: lane l adds chunk totals l, l + 32, ... in double, the same tree adds
// the lanes, and the total is rounded once to float. With one chunk, its total is the result.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "launch_limits.hpp"

namespace dl::gpu {

// Chunk totals kept between the two passes: the partials buffer holds this many doubles
// (256 KiB). The chunk count per sum shrinks as the number of sums grows, so any layer fits;
// a layer with more sums than this gets one chunk per sum, which needs no partials.
inline constexpr std::size_t kBiasSumPartials = std::size_t{1} << 15;

// How one sum of `length` values is split: `count` chunks of `length` values (the last may be
// shorter).
struct SumChunks {
  int count = 1;
  std::int64_t length = 0;
};

// The splits launch_channel_sums and launch_column_sums use: functions of the sizes alone.
SumChunks channel_sum_chunks(int batch, int channels, int spatial);
SumChunks column_sum_chunks(int rows, int cols);

// db[c] = sum over n and s of dy[n][c][s]. `partials` holds kBiasSumPartials doubles.
void launch_channel_sums(int batch, int channels, int spatial, const float* dy, float* db,
                         double* partials, const LaunchLimits& limits, cudaStream_t stream);
// db[c] = sum over rows of dy[r][c]. `partials` holds kBiasSumPartials doubles.
void launch_column_sums(int rows, int cols, const float* dy, float* db, double* partials,
                        const LaunchLimits& limits, cudaStream_t stream);

}  // namespace dl::gpu
