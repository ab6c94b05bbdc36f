// The rule of data.validationSplit, independent of workers, processes and backends:
//
// Of the n training samples (after data.trainLimit), v = floor(n * fraction) are held back. They
// are the last v positions of a Fisher-Yates permutation of [0, n) (for i from n-1 down to 1,
// swap positions i and below(i+1)) driven by RandomStream(seed, kValidationStreamId). Both parts
// keep the order of the files, so the validation set is the same for a given seed and file and
// the epoch plan then shuffles the remaining training samples as it would any training set.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.hpp"

namespace dl {

// Far from the epoch orders (kEpochOrderStreamBase + epoch) and the small ids of layers.
inline constexpr std::uint64_t kValidationStreamId = 0x56414c4944415445ull;

struct SplitIndices {
  std::vector<std::int64_t> train, validation;  // each ascending
};

// Throws DataError when the fraction leaves either part empty.
SplitIndices validation_split_indices(std::int64_t n, double fraction, std::uint64_t seed);

struct TrainValidation {
  Dataset train, validation;
};

TrainValidation split_for_validation(const Dataset& all, double fraction, std::uint64_t seed,
                                     const std::string& source);

}  // namespace dl
