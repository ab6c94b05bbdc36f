#include "data/batch_loader.hpp"

#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/thread_start.hpp"
#include "data/parallel_for.hpp"

namespace dl {

namespace {
std::string prefetch_thread_name(int worker) {
  return fmt::format("worker {}'s batch prefetch thread", worker);
}
}  // namespace

std::vector<std::string> batch_loader_threads(const Dataset& data, int prefetch_depth,
                                              int batch_size, int worker) {
  std::vector<std::string> names;
  if (prefetch_depth > 0) names.push_back(prefetch_thread_name(worker));
  if (data.streamed()) {
    const std::size_t decoders = data_reader_threads(static_cast<std::size_t>(batch_size));
    for (std::size_t t = 1; t < decoders; ++t) names.push_back(data_reader_thread_name(t));
  }
  return names;
}

BatchLoader::BatchLoader(const Dataset& data, std::shared_ptr<const EpochPlan> plan, int worker,
                         std::int64_t first_round, int prefetch_depth)
    : data_(data),
      plan_(std::move(plan)),
      worker_(worker),
      depth_(prefetch_depth),
      next_round_(first_round) {
  DL_CHECK(plan_ != nullptr, "a batch loader needs an epoch plan");
  DL_CHECK(worker >= 0 && worker < plan_->workers(),
           "worker " + std::to_string(worker) + " of " + std::to_string(plan_->workers()));
  DL_CHECK(first_round >= 0 && first_round <= plan_->rounds(),
           "first round " + std::to_string(first_round) + " of " + std::to_string(plan_->rounds()));
  DL_CHECK(prefetch_depth >= 0, "prefetch depth " + std::to_string(prefetch_depth));

  const std::size_t buffers = static_cast<std::size_t>(depth_) + 1;
  const auto batch = static_cast<std::size_t>(plan_->batch_size());
  pool_.resize(buffers);
  for (HostBatch& b : pool_) {
    b.images.reserve(batch * data_.sample_floats());
    b.labels.reserve(batch);
  }
  if (depth_ == 0) return;
  free_.reserve(buffers);
  for (HostBatch& b : pool_) free_.push_back(&b);
  ready_.assign(static_cast<std::size_t>(depth_), nullptr);
  thread_ = start_thread(prefetch_thread_name(worker_), [this] { produce(); });
}

BatchLoader::~BatchLoader() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

void BatchLoader::cancel() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
  }
  changed_.notify_all();
}

void BatchLoader::fill(std::int64_t round, HostBatch& batch) const {
  const EpochPlan::Slice slice = plan_->batch(round, worker_);
  batch.round = round;
  batch.count = slice.count;
  // Within the capacity reserved at construction: no allocation.
  batch.images.resize(slice.count * data_.sample_floats());
  batch.labels.resize(slice.count);
  data_.gather_training(slice.indices, slice.count, plan_->epoch(), batch.images.data(),
                        batch.labels.data());
}

void BatchLoader::produce() {
  try {
    for (;;) {
      HostBatch* buffer = nullptr;
      std::int64_t round = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (next_round_ >= plan_->rounds()) {
          finished_ = true;
          break;
        }
        // At most depth_ batches wait in the queue; the consumer holds one more buffer.
        changed_.wait(lock, [this] {
          return cancelled_ || (ready_count_ < ready_.size() && !free_.empty());
        });
        if (cancelled_) return;
        buffer = free_.back();
        free_.pop_back();
        round = next_round_++;
      }
      fill(round, *buffer);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_[(ready_head_ + ready_count_) % ready_.size()] = buffer;
        ++ready_count_;
      }
      changed_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  changed_.notify_all();
}

const HostBatch* BatchLoader::next_synchronously() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_ || next_round_ >= plan_->rounds()) return nullptr;
  }
  // As with prefetching, a failed round fails every later call too: batches never skip a round.
  if (error_ != nullptr) std::rethrow_exception(error_);
  HostBatch& buffer = pool_.front();
  try {
    fill(next_round_, buffer);
  } catch (...) {
    error_ = std::current_exception();
    throw;
  }
  ++next_round_;
  return &buffer;
}

const HostBatch* BatchLoader::next() {
  if (depth_ == 0) return next_synchronously();
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_ != nullptr) {
    free_.push_back(held_);
    held_ = nullptr;
    changed_.notify_all();
  }
  changed_.wait(
      lock, [this] { return cancelled_ || ready_count_ > 0 || error_ != nullptr || finished_; });
  if (cancelled_) return nullptr;
  if (ready_count_ > 0) {
    held_ = ready_[ready_head_];
    ready_head_ = (ready_head_ + 1) % ready_.size();
    --ready_count_;
    return held_;
  }
  if (error_ != nullptr) std::rethrow_exception(error_);
  return nullptr;
}

}  // namespace dl
