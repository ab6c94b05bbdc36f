// What reaches a process from outside the job while it trains (the CLI's signal handlers): a
// signal asking to stop with a checkpoint, and SIGUSR1's checkpoint request. Rank 0 decides for
// the whole job at each sync point, but a scheduler or an operator may signal any one rank (a
// node being drained, `kill` of the process seen in `top`), so each rank's requests travel to rank
// 0 in the all-reduce every sync point already makes (ParallelTrainer's loss tables): one slot per
// rank and kind, so that no message is added.
#pragma once

#include <vector>

namespace dl {

struct OutsideRequests {
  int stop_signal = 0;     // a signal number asking to stop with a checkpoint; 0: none
  int stop_signal_rank = 0;  // the rank that received it (rank 0's own first)
  bool checkpoint = false;   // a checkpoint asked for (SIGUSR1) on any rank
};

// The slots of `ranks` processes' requests, appended to a table summed over the processes: each
// process fills its own slots and leaves the others' zero.
int outside_request_slots(int ranks);
void put_outside_requests(const OutsideRequests& mine, int rank, int ranks, double* slots);
// The job's requests from the summed slots: rank 0's stop signal if it has one, else the lowest
// rank's; a checkpoint when any rank asked for one.
OutsideRequests take_outside_requests(const double* slots, int ranks);

}  // namespace dl
