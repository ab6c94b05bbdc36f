#include "data/epoch_plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/random.hpp"

namespace dl {

EpochPlan::EpochPlan(std::int64_t dataset_size, int batch_size, int workers, std::uint64_t seed,
                     int epoch, bool shuffle, std::int64_t skipped)
    : batch_size_(batch_size), workers_(workers), epoch_(epoch), skipped_(skipped) {
  DL_CHECK(dataset_size >= 0, "dataset size " + std::to_string(dataset_size));
  DL_CHECK(batch_size >= 1, "batch size " + std::to_string(batch_size));
  DL_CHECK(workers >= 1, "workers " + std::to_string(workers));
  DL_CHECK(epoch >= 0, "epoch " + std::to_string(epoch));
  DL_CHECK(skipped >= 0 && skipped <= dataset_size, "skipped " + std::to_string(skipped));
  round_size_ = static_cast<std::int64_t>(batch_size) * workers;
  rounds_ = (dataset_size - skipped + round_size_ - 1) / round_size_;
  order_.resize(static_cast<std::size_t>(dataset_size));
  std::iota(order_.begin(), order_.end(), std::int64_t{0});
  if (!shuffle) return;
  RandomStream rng(seed, kEpochOrderStreamBase + static_cast<std::uint64_t>(epoch));
  for (std::size_t i = order_.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    std::swap(order_[i - 1], order_[j]);
  }
}

EpochPlan::Slice EpochPlan::batch(std::int64_t round, int worker) const {
  DL_CHECK(round >= 0 && round < rounds_,
           "round " + std::to_string(round) + " of " + std::to_string(rounds_));
  DL_CHECK(worker >= 0 && worker < workers_,
           "worker " + std::to_string(worker) + " of " + std::to_string(workers_));
  const std::int64_t n = dataset_size();
  const std::int64_t begin =
      std::min(n, skipped_ + round * round_size_ + std::int64_t{worker} * batch_size_);
  const std::int64_t end = std::min(n, begin + batch_size_);
  return Slice{order_.data() + begin, static_cast<std::size_t>(end - begin)};
}

std::int64_t EpochPlan::samples_in_round(std::int64_t round) const {
  DL_CHECK(round >= 0 && round < rounds_,
           "round " + std::to_string(round) + " of " + std::to_string(rounds_));
  return std::min(round_size_, dataset_size() - skipped_ - round * round_size_);
}

}  // namespace dl
