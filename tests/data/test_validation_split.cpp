#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "data/validation_split.hpp"

namespace {

constexpr std::uint64_t kSeed = 123;

}  // namespace

TEST_CASE("validationSplit holds back floor(n * fraction) samples; the parts cover the set once",
          "[validation_split]") {
  const dl::SplitIndices split = dl::validation_split_indices(1000, 0.1, kSeed);
  CHECK(split.validation.size() == 100);
  CHECK(split.train.size() == 900);
  CHECK(std::is_sorted(split.train.begin(), split.train.end()));
  CHECK(std::is_sorted(split.validation.begin(), split.validation.end()));
  std::vector<std::int64_t> all;
  std::merge(split.train.begin(), split.train.end(), split.validation.begin(),
             split.validation.end(), std::back_inserter(all));
  std::vector<std::int64_t> expected(1000);
  std::iota(expected.begin(), expected.end(), std::int64_t{0});
  CHECK(all == expected);
  CHECK(dl::validation_split_indices(1001, 0.1, kSeed).validation.size() == 100);
}

TEST_CASE("validationSplit is the documented rule: the last part of a seeded Fisher-Yates order",
          "[validation_split]") {
  constexpr std::int64_t kN = 50;
  std::vector<std::int64_t> order(kN);
  std::iota(order.begin(), order.end(), std::int64_t{0});
  dl::RandomStream rng(kSeed, dl::kValidationStreamId);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<std::size_t>(rng.below(i))]);
  std::vector<std::int64_t> held(order.end() - 10, order.end());
  std::sort(held.begin(), held.end());
  CHECK(dl::validation_split_indices(kN, 0.2, kSeed).validation == held);
  // The seed picks the set; the same seed always the same one.
  CHECK(dl::validation_split_indices(kN, 0.2, kSeed).validation ==
        dl::validation_split_indices(kN, 0.2, kSeed).validation);
  CHECK(dl::validation_split_indices(kN, 0.2, kSeed + 1).validation != held);
}

TEST_CASE("validationSplit that empties a part is a data error naming the fix",
          "[validation_split]") {
  CHECK_THROWS_AS(dl::validation_split_indices(5, 0.1, kSeed), dl::DataError);
  CHECK_THROWS_WITH(dl::validation_split_indices(5, 0.1, kSeed),
                    Catch::Contains("holds back 0") && Catch::Contains("validationSplit"));
  CHECK_THROWS_AS(dl::validation_split_indices(1, 0.99, kSeed), dl::DataError);
}

TEST_CASE("split_for_validation copies the samples of each part", "[validation_split]") {
  std::vector<std::uint8_t> pixels(20 * 4);
  std::vector<std::int32_t> labels(20);
  for (std::size_t i = 0; i < 20; ++i) {
    labels[i] = static_cast<std::int32_t>(i % 10);
    std::fill_n(pixels.begin() + static_cast<std::ptrdiff_t>(4 * i), 4,
                static_cast<std::uint8_t>(i));
  }
  const dl::Dataset all(1, 2, 2, pixels, labels, 10);
  const dl::TrainValidation parts = dl::split_for_validation(all, 0.25, kSeed, "train");
  const dl::SplitIndices split = dl::validation_split_indices(20, 0.25, kSeed);
  REQUIRE(parts.validation.size() == 5);
  REQUIRE(parts.train.size() == 15);
  for (std::size_t i = 0; i < 5; ++i) {
    const auto source = static_cast<std::size_t>(split.validation[i]);
    CHECK(parts.validation.pixels()[4 * i] == source);
    CHECK(parts.validation.labels()[i] == labels[source]);
  }
  CHECK_THROWS_WITH(dl::split_for_validation(all, 0.01, kSeed, "DIR/x.bin"),
                    Catch::StartsWith("DIR/x.bin: "));
}
