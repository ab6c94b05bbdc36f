#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/random.hpp"
#include "data/epoch_plan.hpp"

namespace {

constexpr std::uint64_t kSeed = 12345;

std::vector<std::int64_t> slice_vector(const dl::EpochPlan::Slice& s) {
  return std::vector<std::int64_t>(s.indices, s.indices + s.count);
}

std::vector<std::int64_t> identity(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), std::int64_t{0});
  return v;
}

}  // namespace

TEST_CASE("EpochPlan order is a permutation, fixed by (seed, epoch)", "[epoch_plan]") {
  constexpr std::int64_t kN = 1000;
  const dl::EpochPlan a(kN, 32, 1, kSeed, 0, true);
  std::vector<std::int64_t> sorted = a.order();
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == identity(kN));
  CHECK(a.order() != identity(kN));

  CHECK(dl::EpochPlan(kN, 32, 1, kSeed, 0, true).order() == a.order());
  // Batch size and worker count do not change the order, only how it is cut.
  CHECK(dl::EpochPlan(kN, 7, 3, kSeed, 0, true).order() == a.order());
  CHECK(dl::EpochPlan(kN, 32, 1, kSeed, 1, true).order() != a.order());
  CHECK(dl::EpochPlan(kN, 32, 1, kSeed + 1, 0, true).order() != a.order());
}

TEST_CASE("EpochPlan follows the documented Fisher-Yates rule", "[epoch_plan]") {
  constexpr std::int64_t kN = 50;
  constexpr int kEpoch = 3;
  std::vector<std::int64_t> expected = identity(kN);
  dl::RandomStream rng(kSeed, dl::kEpochOrderStreamBase + kEpoch);
  for (std::int64_t i = kN - 1; i >= 1; --i) {
    std::swap(expected[static_cast<std::size_t>(i)],
              expected[rng.below(static_cast<std::uint64_t>(i) + 1)]);
  }
  CHECK(dl::EpochPlan(kN, 8, 2, kSeed, kEpoch, true).order() == expected);
}

TEST_CASE("EpochPlan without shuffle visits samples in file order", "[epoch_plan]") {
  const dl::EpochPlan plan(100, 16, 2, kSeed, 4, false);
  CHECK(plan.order() == identity(100));
  CHECK(slice_vector(plan.batch(1, 1)) ==
        std::vector<std::int64_t>{48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63});
}

TEST_CASE("EpochPlan: 2 workers x 64 see what 1 worker x 128 sees, in halves", "[epoch_plan]") {
  constexpr std::int64_t kN = 1000;
  const dl::EpochPlan one(kN, 128, 1, kSeed, 2, true);
  const dl::EpochPlan two(kN, 64, 2, kSeed, 2, true);
  REQUIRE(one.rounds() == two.rounds());
  REQUIRE(one.rounds() == 8);
  for (std::int64_t r = 0; r < one.rounds(); ++r) {
    std::vector<std::int64_t> joined = slice_vector(two.batch(r, 0));
    const std::vector<std::int64_t> second = slice_vector(two.batch(r, 1));
    joined.insert(joined.end(), second.begin(), second.end());
    CHECK(joined == slice_vector(one.batch(r, 0)));
    CHECK(two.samples_in_round(r) == one.samples_in_round(r));
  }
}

TEST_CASE("EpochPlan short last round is cut in worker order", "[epoch_plan]") {
  const dl::EpochPlan plan(300, 64, 2, kSeed, 0, true);
  REQUIRE(plan.rounds() == 3);
  CHECK(plan.batch(0, 0).count == 64);
  CHECK(plan.batch(1, 1).count == 64);
  CHECK(plan.batch(2, 0).count == 44);
  CHECK(plan.batch(2, 1).count == 0);
  CHECK(plan.samples_in_round(0) == 128);
  CHECK(plan.samples_in_round(2) == 44);

  const dl::EpochPlan partial(300, 40, 3, kSeed, 0, true);  // rounds of 120: 120, 120, 60
  REQUIRE(partial.rounds() == 3);
  CHECK(partial.batch(2, 0).count == 40);
  CHECK(partial.batch(2, 1).count == 20);
  CHECK(partial.batch(2, 2).count == 0);
}

TEST_CASE("EpochPlan gives every index to exactly one worker once per epoch", "[epoch_plan]") {
  for (const int workers : {1, 2, 3, 5}) {
    for (const std::int64_t n :
         {std::int64_t{1}, std::int64_t{299}, std::int64_t{300}, std::int64_t{1001}}) {
      const dl::EpochPlan plan(n, 17, workers, kSeed, 1, true);
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::int64_t total = 0;
      for (std::int64_t r = 0; r < plan.rounds(); ++r) {
        std::int64_t in_round = 0;
        for (int w = 0; w < workers; ++w) {
          const dl::EpochPlan::Slice s = plan.batch(r, w);
          for (std::size_t i = 0; i < s.count; ++i) ++seen[static_cast<std::size_t>(s.indices[i])];
          in_round += static_cast<std::int64_t>(s.count);
        }
        CHECK(in_round == plan.samples_in_round(r));
        total += in_round;
      }
      CHECK(total == n);
      CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    }
  }
}

TEST_CASE("EpochPlan of an empty data set has no rounds", "[epoch_plan]") {
  CHECK(dl::EpochPlan(0, 8, 2, kSeed, 0, true).rounds() == 0);
}

TEST_CASE("EpochPlan resumed under another layout visits the rest of the same order once",
          "[epoch_plan]") {
  constexpr std::int64_t kN = 600;
  constexpr std::int64_t kTrained = 256;  // 4 rounds of 2 workers x 32
  const dl::EpochPlan before(kN, 32, 2, kSeed, 1, true);
  for (const int workers : {1, 2, 3}) {
    const std::int64_t round_size = 32 * workers;
    const dl::EpochPlan after(kN, 32, workers, kSeed, 1, true, kTrained % round_size);
    CHECK(after.order() == before.order());
    std::vector<std::int64_t> visited;
    for (std::int64_t r = kTrained / round_size; r < after.rounds(); ++r) {
      std::int64_t in_round = 0;
      for (int w = 0; w < workers; ++w) {
        const std::vector<std::int64_t> batch = slice_vector(after.batch(r, w));
        visited.insert(visited.end(), batch.begin(), batch.end());
        in_round += static_cast<std::int64_t>(batch.size());
      }
      CHECK(in_round == after.samples_in_round(r));
    }
    const std::vector<std::int64_t> rest(before.order().begin() + kTrained, before.order().end());
    CHECK(visited == rest);
  }
}
