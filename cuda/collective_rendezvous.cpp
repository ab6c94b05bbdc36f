#include "collective_rendezvous.hpp"

#include "core/error.hpp"
#include "parallel/collective.hpp"

namespace dl::gpu {

Rendezvous::Rendezvous(int participants) : participants_(participants) {
  DL_CHECK(participants >= 1, "a rendezvous needs at least one participant");
}

void Rendezvous::arrive() {
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

void Rendezvous::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  all_arrived_.notify_all();
}

bool Rendezvous::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_;
}

}  // namespace dl::gpu
