// A reusable meeting point for a fixed set of threads: arrive() returns once all of them have
// arrived, and abort() wakes every waiter, which then throws CollectiveAborted, as does every
// later arrive(). The thread collective meets here between its phases, and the GPU collective
// orders its host-side hand-offs (buffer pointers, recorded events) with it.
//
// Everything a thread writes before arrive() is visible to every thread after that arrive()
// returns (the mutex orders it), which is what publishing a buffer pointer or an event needs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/error.hpp"
#include "parallel/collective.hpp"

namespace dl {

class Rendezvous {
 public:
  explicit Rendezvous(int participants) : participants_(participants) {
    DL_CHECK(participants >= 1, "a rendezvous needs at least one participant");
  }
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int participants() const { return participants_; }

  void arrive() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) throw CollectiveAborted();
    const std::uint64_t meeting = generation_;
    if (++arrived_ == participants_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
      return;
    }
    all_arrived_.wait(lock, [&] { return generation_ != meeting || aborted_; });
    // A meeting that completed before the abort still counts: every participant arrived.
    if (generation_ == meeting) throw CollectiveAborted();
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    all_arrived_.notify_all();
  }

  bool aborted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborted_;
  }

 private:
  const int participants_;
  mutable std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;  // completed meetings; a waiter leaves when it changes
  bool aborted_ = false;
};

}  // namespace dl
