// The data-parallel sharding rule, exact so that runs with different worker counts can be
// compared sample for sample.
//
// Epoch e visits the samples in a permutation of [0, n): a Fisher-Yates shuffle (for i from
// n-1 down to 1, swap positions i and below(i+1)) driven by
// RandomStream(seed, kEpochOrderStreamBase + e), or the identity when shuffle is off. A round
// covers the next workers * batch_size positions of that order; worker w takes the w-th
// consecutive slice of batch_size positions in it. So 2 workers x 64 see exactly what
// 1 worker x 128 sees, split in halves. The last round may be short; its slices are cut in
// worker order, so late workers may get fewer or no samples.
//
// An epoch resumed under another layout (ranks x workers) starts its rounds after the positions
// already trained (`skipped`): round r then covers the workers * batch_size positions from
// skipped + r * workers * batch_size on, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dl {

// Stream ids of the epoch orders: far from the small ids layers and workers use.
inline constexpr std::uint64_t kEpochOrderStreamBase = 0x45504f4348000000ull;

class EpochPlan {
 public:
  EpochPlan(std::int64_t dataset_size, int batch_size, int workers, std::uint64_t seed, int epoch,
            bool shuffle, std::int64_t skipped = 0);

  std::int64_t rounds() const { return rounds_; }
  int workers() const { return workers_; }
  int batch_size() const { return batch_size_; }
  int epoch() const { return epoch_; }
  std::int64_t skipped() const { return skipped_; }
  std::int64_t dataset_size() const { return static_cast<std::int64_t>(order_.size()); }
  // The epoch's visiting order (a permutation of [0, dataset_size())).
  const std::vector<std::int64_t>& order() const { return order_; }

  struct Slice {
    const std::int64_t* indices;
    std::size_t count;
  };
  // Worker `worker`'s samples in round `round`; count may be 0 in a short last round.
  Slice batch(std::int64_t round, int worker) const;
  std::int64_t samples_in_round(std::int64_t round) const;

 private:
  int batch_size_;
  int workers_;
  int epoch_;
  std::int64_t skipped_;
  std::int64_t round_size_;
  std::int64_t rounds_;
  std::vector<std::int64_t> order_;
};

}  // namespace dl
