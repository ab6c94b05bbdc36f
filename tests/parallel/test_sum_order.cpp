// The job's one sum order (parallel/sum_order.hpp): the tree it names, the same bits from every
// layout of N ranks x M workers with M a power of two, and the thread collective adding so.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "parallel/sum_order.hpp"
#include "parallel/thread_collective.hpp"

namespace {

// Values of widely spread magnitudes and both signs, so that adding them in another order
// changes the last bits of most sums.
float spread_value(std::size_t buffer, std::size_t i) {
  std::uint64_t h = (buffer + 1) * 0x9E3779B97F4A7C15ULL ^ (i + 1) * 0xC2B2AE3D27D4EB4FULL;
  h ^= h >> 29;
  const float mantissa = 1.0F + static_cast<float>(h % 1000003) / 1000003.0F;
  const int exponent = static_cast<int>((h >> 20) % 24);
  return std::ldexp((h >> 40) % 2 == 0 ? mantissa : -mantissa, exponent);
}

// The order written out from its definition, one element at a time: split after the largest
// power of two below the length, left sum plus right sum.
float naive_tree(const std::vector<float>& v, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return v[lo];
  std::size_t left = 1;
  while (left * 2 < hi - lo) left *= 2;
  return naive_tree(v, lo, lo + left) + naive_tree(v, lo + left, hi);
}

using Buffers = std::vector<std::vector<float>>;

Buffers spread_buffers(int count, std::size_t n) {
  Buffers b(static_cast<std::size_t>(count), std::vector<float>(n));
  for (std::size_t r = 0; r < b.size(); ++r)
    for (std::size_t i = 0; i < n; ++i) b[r][i] = spread_value(r, i);
  return b;
}

std::vector<float> tree_sum(Buffers b, std::size_t begin, std::size_t end) {
  std::vector<float*> parts;
  for (auto& v : b) parts.push_back(v.data());
  dl::add_in_tree_order(parts.data(), static_cast<int>(parts.size()), begin, end);
  return b[0];
}

}  // namespace

TEST_CASE("sum order: the tree its definition names, over a range of elements") {
  constexpr std::size_t kN = 257;
  for (int count : {1, 2, 3, 4, 5, 6, 7, 8, 12}) {
    const Buffers b = spread_buffers(count, kN);
    const std::vector<float> sum = tree_sum(b, 10, 200);
    for (std::size_t i = 0; i < kN; ++i) {
      std::vector<float> column;
      for (const auto& v : b) column.push_back(v[i]);
      const float want = i >= 10 && i < 200 ? naive_tree(column, 0, column.size()) : b[0][i];
      CHECK(sum[i] == want);
    }
  }
}

TEST_CASE("sum order: N x M buffers add as the N sums of M each, M a power of two") {
  constexpr std::size_t kN = 1000;
  for (int workers : {1, 2, 4, 8}) {
    for (int ranks : {1, 2, 3, 5, 6}) {
      const Buffers all = spread_buffers(ranks * workers, kN);
      Buffers rank_sums;
      for (int r = 0; r < ranks; ++r) {
        const Buffers mine(all.begin() + r * workers, all.begin() + (r + 1) * workers);
        rank_sums.push_back(tree_sum(mine, 0, kN));
      }
      INFO(ranks << " ranks x " << workers << " workers");
      CHECK(tree_sum(rank_sums, 0, kN) == tree_sum(all, 0, kN));
    }
  }
  // Not so with 3 workers per rank: 2 x 3 adds ((b0 + b1) + b2) + ((b3 + b4) + b5). The values
  // are such that the orders differ somewhere, so the property above is no accident.
  const Buffers six = spread_buffers(6, kN);
  const Buffers first(six.begin(), six.begin() + 3), second(six.begin() + 3, six.end());
  CHECK(tree_sum({tree_sum(first, 0, kN), tree_sum(second, 0, kN)}, 0, kN) != tree_sum(six, 0, kN));
}

TEST_CASE("thread collective: 4 and 6 threads add in the job's one order, all the same bits") {
  constexpr std::size_t kN = 1001;  // not a multiple of the threads: uneven slices
  for (int threads : {4, 6}) {
    Buffers b = spread_buffers(threads, kN);
    const std::vector<float> want = tree_sum(b, 0, kN);
    dl::ThreadCollective collective(threads);
    std::vector<std::thread> running;
    for (int r = 0; r < threads; ++r)
      running.emplace_back([&, r] { collective.all_reduce_sum(r, b[r].data(), kN); });
    for (auto& t : running) t.join();
    for (const auto& got : b) CHECK(got == want);
  }
}
