#include "parallel/outside_requests.hpp"

#include <cstddef>

namespace dl {

int outside_request_slots(int ranks) { return 2 * ranks; }

void put_outside_requests(const OutsideRequests& mine, int rank, int ranks, double* slots) {
  slots[rank] = static_cast<double>(mine.stop_signal);
  slots[ranks + rank] = mine.checkpoint ? 1.0 : 0.0;
}

OutsideRequests take_outside_requests(const double* slots, int ranks) {
  OutsideRequests job;
  for (int r = 0; r < ranks; ++r) {
    if (job.stop_signal == 0 && slots[r] != 0.0) {
      job.stop_signal = static_cast<int>(slots[r]);
      job.stop_signal_rank = r;
    }
    if (slots[ranks + r] != 0.0) job.checkpoint = true;
  }
  return job;
}

}  // namespace dl
