// The bias gradients (cuda/ops/bias_sums.hpp) on the host grid: the same bits under every launch
// limit, equal to the order of additions the header documents (replayed here on the host), and
// close to the exact sums. The shapes cover one chunk and several, planes narrower than a warp
// (the carried steps), one value per plane, and the cap on the partials buffer.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "host_grid.hpp"
#include "host_grid_support.hpp"
#include "ops/bias_sums.hpp"

namespace dl {
namespace {

using testing::check_same_bits;
using testing::describe;
using testing::host_grid_limits;
using testing::random_floats;

constexpr cudaStream_t kStream = nullptr;
constexpr int kLanes = 32;

// Lane 0 of the warp shuffle tree: lane l adds lane l + 16, then l + 8, l + 4, l + 2, l + 1.
double lane_tree(std::array<double, kLanes> v) {
  for (int offset = kLanes / 2; offset > 0; offset /= 2)
    for (int l = 0; l + offset < kLanes; ++l) v[l] += v[l + offset];
  return v[0];
}

// The chunk totals of one sum, then the result, in the documented order.
float total_of_chunks(const std::vector<double>& chunk_totals) {
  if (chunk_totals.size() == 1) return static_cast<float>(chunk_totals[0]);
  std::array<double, kLanes> lanes{};
  for (std::size_t k = 0; k < chunk_totals.size(); ++k) lanes[k % kLanes] += chunk_totals[k];
  return static_cast<float>(lane_tree(lanes));
}

std::vector<float> channel_sums_in_order(int batch, int channels, int spatial,
                                         const std::vector<float>& dy) {
  const gpu::SumChunks chunks = gpu::channel_sum_chunks(batch, channels, spatial);
  const std::int64_t values = std::int64_t{batch} * spatial;
  std::vector<float> db(channels);
  for (int c = 0; c < channels; ++c) {
    std::vector<double> totals;
    for (int k = 0; k < chunks.count; ++k) {
      std::array<double, kLanes> lanes{};
      const std::int64_t begin = k * chunks.length;
      for (std::int64_t j = begin; j < std::min(begin + chunks.length, values); ++j)
        lanes[(j - begin) % kLanes] += dy[((j / spatial) * channels + c) * spatial + j % spatial];
      totals.push_back(lane_tree(lanes));
    }
    db[c] = total_of_chunks(totals);
  }
  return db;
}

std::vector<float> column_sums_in_order(int rows, int cols, const std::vector<float>& dy) {
  const gpu::SumChunks chunks = gpu::column_sum_chunks(rows, cols);
  std::vector<float> db(cols);
  for (int c = 0; c < cols; ++c) {
    std::vector<double> totals;
    for (int k = 0; k < chunks.count; ++k) {
      double sum = 0.0;
      for (std::int64_t r = k * chunks.length;
           r < std::min<std::int64_t>((k + 1) * chunks.length, rows); ++r)
        sum += dy[r * cols + c];
      totals.push_back(sum);
    }
    db[c] = total_of_chunks(totals);
  }
  return db;
}

// The plain sum in long double: the order-free answer both orders must be close to.
std::vector<float> exact_sums(int outer, int sums, int inner, const std::vector<float>& v) {
  std::vector<float> out(sums);
  for (int s = 0; s < sums; ++s) {
    long double sum = 0.0L;
    for (int o = 0; o < outer; ++o)
      for (int i = 0; i < inner; ++i) sum += v[(std::size_t(o) * sums + s) * inner + i];
    out[s] = static_cast<float>(sum);
  }
  return out;
}

TEST_CASE("host grid: channel sums in their documented order under every launch limit") {
  struct Shape {
    int batch, channels, spatial;
  };
  // One chunk; seven chunks; planes of 7 (steps carry); one value per plane; a partial last chunk.
  for (const Shape s :
       {Shape{3, 4, 25}, Shape{5, 3, 700}, Shape{300, 2, 7}, Shape{1000, 3, 1}, Shape{33, 2, 50}}) {
    INFO("batch " << s.batch << ", channels " << s.channels << ", spatial " << s.spatial);
    const auto dy = random_floats(std::size_t(s.batch) * s.channels * s.spatial, 60 + s.spatial);
    const auto want = channel_sums_in_order(s.batch, s.channels, s.spatial, dy);
    testing::check_near("vs exact", want, exact_sums(s.batch, s.channels, s.spatial, dy), 1e-6);
    std::vector<double> partials(gpu::kBiasSumPartials);
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim));
      std::vector<float> db(s.channels, 9.0f);
      gpu::launch_channel_sums(s.batch, s.channels, s.spatial, dy.data(), db.data(),
                               partials.data(), lim, kStream);
      check_same_bits("channel sums", db, want);
    }
  }
}

TEST_CASE("host grid: column sums in their documented order under every launch limit") {
  struct Shape {
    int rows, cols;
  };
  // One chunk (fewer rows than a chunk); several chunks; few columns, many rows.
  for (const Shape s : {Shape{13, 70}, Shape{100, 70}, Shape{1000, 3}}) {
    INFO("rows " << s.rows << ", cols " << s.cols);
    const auto dy = random_floats(std::size_t(s.rows) * s.cols, 70 + s.cols);
    const auto want = column_sums_in_order(s.rows, s.cols, dy);
    testing::check_near("vs exact", want, exact_sums(s.rows, s.cols, 1, dy), 1e-6);
    std::vector<double> partials(gpu::kBiasSumPartials);
    for (const auto& lim : host_grid_limits()) {
      INFO(describe(lim));
      std::vector<float> db(s.cols, 9.0f);
      gpu::launch_column_sums(s.rows, s.cols, dy.data(), db.data(), partials.data(), lim, kStream);
      check_same_bits("column sums", db, want);
    }
  }
}

TEST_CASE("bias sums: chunks depend on the sizes alone and fit the partials buffer") {
  // conv1 of LeNet at batch 2048: 20 channels of 2048 * 24 * 24 values.
  const gpu::SumChunks conv1 = gpu::channel_sum_chunks(2048, 20, 576);
  CHECK(conv1.count > 1000);
  CHECK(std::size_t(conv1.count) * 20 <= gpu::kBiasSumPartials);
  CHECK(conv1.length % kLanes == 0);
  CHECK(conv1.length * (conv1.count - 1) < 2048 * 576);
  CHECK(conv1.length * conv1.count >= 2048 * 576);
  // More sums than the buffer holds: one chunk each, which needs no partials.
  const int many = static_cast<int>(gpu::kBiasSumPartials) + 1;
  CHECK(gpu::column_sum_chunks(4096, many).count == 1);
  CHECK(gpu::channel_sum_chunks(64, many, 64).count == 1);
  const gpu::SumChunks dense = gpu::column_sum_chunks(2048, 500);
  CHECK(std::size_t(dense.count) * 500 <= gpu::kBiasSumPartials);
  CHECK(dense.count > 1);
  // Empty sums are zeros, under any limits.
  std::vector<double> partials(gpu::kBiasSumPartials);
  std::vector<float> db(3, 9.0f);
  gpu::launch_channel_sums(0, 3, 5, nullptr, db.data(), partials.data(), host_grid_limits()[0],
                           kStream);
  check_same_bits("no samples", db, std::vector<float>(3, 0.0f));
  db.assign(3, 9.0f);
  gpu::launch_column_sums(0, 3, nullptr, db.data(), partials.data(), host_grid_limits()[0],
                          kStream);
  check_same_bits("no rows", db, std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace dl
