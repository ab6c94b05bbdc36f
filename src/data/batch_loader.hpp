// One worker's minibatch loader. Each worker owns one (and with prefetching, one thread), so a
// slow worker never starves the others, unlike a single loader thread shared by all workers.
//
// The batches are fixed by the EpochPlan: their content never depends on timing. With
// prefetch_depth > 0 a background thread keeps up to that many batches ready in a bounded
// queue, filling a pool of prefetch_depth + 1 reused buffers (sized once, at construction, for
// a full batch), so nothing is allocated while loading. With 0, next() loads synchronously into
// one buffer. An exception on the loader thread is rethrown by next(), after the batches
// loaded before it have been handed out.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "data/dataset.hpp"
#include "data/epoch_plan.hpp"

namespace dl {

struct HostBatch {
  std::int64_t round = 0;
  std::size_t count = 0;
  std::vector<float> images;         // count * sample_floats values in [0, 1], sample-major
  std::vector<std::int32_t> labels;  // count class indices
};

// The threads a BatchLoader of `data` for worker `worker` starts besides the calling thread, as
// they are named: its prefetch thread (prefetch_depth > 0) and, for a streamed image folder, the
// threads that decode one of its batches of `batch_size` samples (data/parallel_for.hpp).
std::vector<std::string> batch_loader_threads(const Dataset& data, int prefetch_depth,
                                              int batch_size, int worker);

class BatchLoader {
 public:
  // Loads worker `worker`'s batches of `plan` for rounds first_round .. plan.rounds()-1. `data`
  // must outlive the loader.
  BatchLoader(const Dataset& data, std::shared_ptr<const EpochPlan> plan, int worker,
              std::int64_t first_round, int prefetch_depth);
  ~BatchLoader();  // cancels and joins
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next round's batch (count may be 0 in a short last round), or nullptr after the last
  // round or once cancelled. The pointer stays valid until the next call of next().
  const HostBatch* next();
  // Makes next() return nullptr promptly and stops the thread; safe from another thread.
  void cancel();

 private:
  void fill(std::int64_t round, HostBatch& batch) const;
  void produce();
  const HostBatch* next_synchronously();

  const Dataset& data_;
  std::shared_ptr<const EpochPlan> plan_;
  int worker_;
  int depth_;
  std::int64_t next_round_;  // next round to load (the producer's, or next()'s when depth_ = 0)

  std::vector<HostBatch> pool_;
  std::mutex mutex_;
  std::condition_variable changed_;  // any change of the state below
  std::vector<HostBatch*> free_;     // buffers the producer may fill
  std::vector<HostBatch*> ready_;    // ring of loaded batches, in round order
  std::size_t ready_head_ = 0, ready_count_ = 0;
  HostBatch* held_ = nullptr;  // returned by the last next()
  bool cancelled_ = false;
  bool finished_ = false;  // the producer has loaded its last round
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace dl
