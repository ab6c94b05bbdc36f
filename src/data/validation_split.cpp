#include "data/validation_split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "core/error.hpp"
#include "core/random.hpp"

namespace dl {

SplitIndices validation_split_indices(std::int64_t n, double fraction, std::uint64_t seed) {
  const auto held = static_cast<std::int64_t>(std::floor(static_cast<double>(n) * fraction));
  if (held < 1 || held >= n) {
    throw DataError(fmt::format(
        "data.validationSplit {} of {} training samples holds back {}; it must leave at least one "
        "sample in each set: raise or lower validationSplit, or use more training data",
        fraction, n, held));
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  RandomStream rng(seed, kValidationStreamId);
  for (std::size_t i = order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  const auto cut = order.begin() + (n - held);
  SplitIndices split{{order.begin(), cut}, {cut, order.end()}};
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.validation.begin(), split.validation.end());
  return split;
}

TrainValidation split_for_validation(const Dataset& all, double fraction, std::uint64_t seed,
                                     const std::string& source) {
  try {
    const SplitIndices split = validation_split_indices(all.size(), fraction, seed);
    return {all.subset(split.train), all.subset(split.validation)};
  } catch (const DataError& e) {
    throw DataError(source + ": " + e.what());
  }
}

}  // namespace dl
