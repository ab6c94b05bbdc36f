// The bias gradients in two passes (bias_sums.hpp gives the order of the additions): chunk
// totals into the partials buffer, then one warp per sum adds its chunk totals. A GPU profile of
// a LeNet step showed the one-pass forms (one block per channel, one thread per column) as its
// largest kernels: conv1 has 20 channels, so 20 blocks did all the work.
#include <algorithm>

#include "cuda_check.hpp"
#include "ops/bias_sums.hpp"
#include "ops/kernel_support.cuh"

namespace dl::gpu {

namespace {

// Values per chunk, at least: enough work per warp (channel sums: 16 values per lane) or thread
// (column sums) to hide the cost of the second pass.
constexpr std::int64_t kChannelChunkMin = 16 * kWarpLanes;
constexpr std::int64_t kColumnChunkMin = 16;

// ---- kernels ----------------------------------------------------------------------------------

// One warp per (channel c, chunk k), item c * chunks.count + k. Each lane steps kWarpLanes values
// along the channel's (sample, position) sequence by carrying, not dividing: one division per
// lane and chunk. With one chunk per channel the total is the result.
__global__ void channel_chunk_sums_kernel(int batch, int channels, int spatial, SumChunks chunks,
                                          const float* dy, double* partials, float* db) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  const int sample_step = kWarpLanes / spatial;
  const int position_step = kWarpLanes % spatial;
  const std::int64_t values = static_cast<std::int64_t>(batch) * spatial;
  const int items = channels * chunks.count;
  for (int item = first_warp(); item < items; item += warp_stride()) {
    const int c = item / chunks.count;
    const std::int64_t begin = static_cast<std::int64_t>(item % chunks.count) * chunks.length;
    const std::int64_t end = begin + chunks.length < values ? begin + chunks.length : values;
    std::int64_t j = begin + lane;
    int sample = static_cast<int>(j / spatial);
    int position = static_cast<int>(j % spatial);
    double sum = 0.0;
    for (; j < end; j += kWarpLanes) {
      sum += dy[(static_cast<std::size_t>(sample) * channels + c) * spatial + position];
      sample += sample_step;
      position += position_step;
      if (position >= spatial) {
        position -= spatial;
        ++sample;
      }
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      if (chunks.count == 1) {
        db[c] = static_cast<float>(sum);
      } else {
        partials[item] = sum;
      }
    }
  }
}

// One thread per (chunk k, column c), item k * cols + c, so neighbouring threads read
// neighbouring floats of a row. The total goes to partials[c * chunks.count + k], or with one
// chunk per column to db[c].
__global__ void column_chunk_sums_kernel(int rows, int cols, SumChunks chunks, const float* dy,
                                         double* partials, float* db) {
  const std::size_t items = static_cast<std::size_t>(cols) * chunks.count;
  for (std::size_t i = first_index(); i < items; i += grid_stride()) {
    const int item = static_cast<int>(i);
    const int k = item / cols;
    const int c = item % cols;
    const int begin = static_cast<int>(k * chunks.length);
    const int end = static_cast<int>(begin + chunks.length < rows ? begin + chunks.length : rows);
    const float* p = dy + static_cast<std::size_t>(begin) * cols + c;
    double sum = 0.0;
    for (int r = begin; r < end; ++r, p += cols) sum += *p;
    if (chunks.count == 1) {
      db[c] = static_cast<float>(sum);
    } else {
      partials[static_cast<std::size_t>(c) * chunks.count + k] = sum;
    }
  }
}

// One warp per sum o: out[o] = float(sum of partials[o * chunks .. (o + 1) * chunks)).
__global__ void chunk_totals_kernel(int sums, int chunks, const double* partials, float* out) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpLanes;
  for (int o = first_warp(); o < sums; o += warp_stride()) {
    const double* p = partials + static_cast<std::size_t>(o) * chunks;
    double sum = 0.0;
    for (int k = lane; k < chunks; k += kWarpLanes) sum += p[k];
    sum = warp_sum(sum);
    if (lane == 0) out[o] = static_cast<float>(sum);
  }
}

// The split of `sums` sums of `values` values each: as many chunks as give each at least
// `min_chunk` values, within the partials buffer, each a multiple of `align` values long.
SumChunks plan_sum_chunks(std::int64_t values, int sums, std::int64_t min_chunk, int align) {
  const std::int64_t most =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(kBiasSumPartials) / std::max(sums, 1));
  const std::int64_t wanted = (values + min_chunk - 1) / min_chunk;
  const std::int64_t count = std::clamp<std::int64_t>(wanted, 1, most);
  std::int64_t length = (values + count - 1) / count;
  length = std::max<std::int64_t>((length + align - 1) / align * align, align);
  SumChunks chunks;
  chunks.length = length;
  chunks.count = static_cast<int>(std::max<std::int64_t>((values + length - 1) / length, 1));
  return chunks;
}

// Blocks for one warp per item, whole warps per block.
int warp_grid(const LaunchLimits& limits, std::size_t items, int block) {
  return limits.grid(items * kWarpLanes, block);
}

void add_chunk_totals(int sums, SumChunks chunks, const double* partials, float* out,
                      const LaunchLimits& limits, cudaStream_t stream) {
  if (chunks.count == 1) return;
  const int block = limits.reduction_block();
  chunk_totals_kernel<<<warp_grid(limits, static_cast<std::size_t>(sums), block), block, 0,
                        stream>>>(sums, chunks.count, partials, out);
  DL_CUDA_LAUNCHED(chunk_totals_kernel);
}

}  // namespace

SumChunks channel_sum_chunks(int batch, int channels, int spatial) {
  return plan_sum_chunks(static_cast<std::int64_t>(batch) * spatial, channels, kChannelChunkMin,
                         kWarpLanes);
}

SumChunks column_sum_chunks(int rows, int cols) {
  return plan_sum_chunks(rows, cols, kColumnChunkMin, 1);
}

// ---- launchers --------------------------------------------------------------------------------

void launch_channel_sums(int batch, int channels, int spatial, const float* dy, float* db,
                         double* partials, const LaunchLimits& limits, cudaStream_t stream) {
  if (channels <= 0) return;
  if (batch <= 0 || spatial <= 0) {  // empty sums; the kernel's steps divide by spatial
    DL_CUDA_CALL(
        cudaMemsetAsync(db, 0, static_cast<std::size_t>(channels) * sizeof(float), stream));
    return;
  }
  const SumChunks chunks = channel_sum_chunks(batch, channels, spatial);
  const int block = limits.reduction_block();
  const std::size_t items = static_cast<std::size_t>(channels) * chunks.count;
  channel_chunk_sums_kernel<<<warp_grid(limits, items, block), block, 0, stream>>>(
      batch, channels, spatial, chunks, dy, partials, db);
  DL_CUDA_LAUNCHED(channel_chunk_sums_kernel);
  add_chunk_totals(channels, chunks, partials, db, limits, stream);
}

void launch_column_sums(int rows, int cols, const float* dy, float* db, double* partials,
                        const LaunchLimits& limits, cudaStream_t stream) {
  if (cols <= 0) return;
  if (rows <= 0) {
    DL_CUDA_CALL(cudaMemsetAsync(db, 0, static_cast<std::size_t>(cols) * sizeof(float), stream));
    return;
  }
  const SumChunks chunks = column_sum_chunks(rows, cols);
  const int block = limits.block();
  const std::size_t items = static_cast<std::size_t>(cols) * chunks.count;
  column_chunk_sums_kernel<<<limits.grid(items, block), block, 0, stream>>>(rows, cols, chunks, dy,
                                                                            partials, db);
  DL_CUDA_LAUNCHED(column_chunk_sums_kernel);
  add_chunk_totals(cols, chunks, partials, db, limits, stream);
}

}  // namespace dl::gpu
