// A reusable meeting point for the threads of a fixed set of workers (one device group, or every
// local worker): arrive() returns once all of them have arrived, and abort() wakes every waiter,
// which then throws CollectiveAborted, as does every later arrive(). No CUDA: the GPU collective
// orders its host-side hand-offs (buffer pointers, recorded events) with it.
//
// Everything a worker writes before arrive() is visible to every worker after that arrive()
// returns (the mutex orders it), which is what publishing a buffer pointer or an event record
// needs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace dl::gpu {

class Rendezvous {
 public:
  explicit Rendezvous(int participants);
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int participants() const { return participants_; }
  void arrive();
  void abort();
  bool aborted() const;

 private:
  const int participants_;
  mutable std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;  // completed meetings; a waiter leaves when it changes
  bool aborted_ = false;
};

}  // namespace dl::gpu
