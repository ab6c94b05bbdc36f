// Test cases with planted results, for test_junit_report.py: passes only, a failure among passes,
// sections that pass and sections that fail, a thrown exception, a warning and a case with no
// assertion. Its report must list each of them as Catch2's own junit reporter lists them.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

namespace {

constexpr int kManyValues = 1000;

std::vector<int> counting_values() {
  std::vector<int> values(kManyValues);
  for (int i = 0; i < kManyValues; ++i) values[i] = i;
  return values;
}

}  // namespace

TEST_CASE("planted: many passing assertions") {
  const auto values = counting_values();
  for (int i = 0; i < kManyValues; ++i) REQUIRE(values[i] == i);
}

TEST_CASE("planted: one failure among passes") {
  const auto values = counting_values();
  for (int i = 0; i < kManyValues; ++i) CHECK(values[i] == (i == kManyValues / 2 ? -1 : i));
}

TEST_CASE("planted: sections") {
  const auto values = counting_values();
  SECTION("passing section") {
    for (int i = 0; i < kManyValues; ++i) CHECK(values[i] >= 0);
  }
  SECTION("failing section") {
    CHECK(values.front() == 0);
    CHECK(values.back() == 0);
  }
  SECTION("outer") {
    SECTION("nested passing section") {
      CHECK(values.size() == kManyValues);
    }
  }
}

TEST_CASE("planted: an exception after passes") {
  CHECK(counting_values().size() == kManyValues);
  throw std::runtime_error("planted exception");
}

TEST_CASE("planted: a warning and no assertion") {
  WARN("planted warning");
}

TEST_CASE("planted: no assertion at all") {}
