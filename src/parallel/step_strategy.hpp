// How the workers' gradients become updates of their replicas: a step strategy per
// config.parallel.mode. Each decision (when the workers meet at a sync point, what an overflow or
// a non-finite loss does) sits in its strategy, beside the DESIGN.md paragraph it implements.
// The worker loop (parallel_trainer.cpp) is the same for both: next batch, gradient, update,
// and at sync points the strategy's part, then the meeting.
#pragma once

#include <cstdint>
#include <memory>

#include "config/config.hpp"
#include "data/epoch_plan.hpp"
#include "parallel/collective.hpp"
#include "parallel/replica.hpp"

namespace dl {

// One worker's round, as a strategy sees it.
struct WorkerRound {
  int worker = 0;         // local index: the collective's participant
  int global_worker = 0;  // index among all workers of the job: its batches in the plan
  int epoch = 0;
  std::int64_t round = 0;
  std::int64_t iteration = 0;  // global step of this round (0-based)
  const EpochPlan* plan = nullptr;
  int samples = 0;             // this worker's batch; 0 in a short last round
  float* loss = nullptr;       // the batch's summed loss, in backend memory
  double lr_multiplier = 1.0;  // linear learning-rate scaling with warm-up
};

class StepStrategy {
 public:
  virtual ~StepStrategy() = default;

  // Whether the workers meet after the round `w` (sync points: rounds after which every replica
  // can be reported and saved). The last round of an epoch always is one. Between two sync points
  // no worker waits for the host unless its strategy's decision needs a value (see update()).
  virtual bool is_sync_point(const WorkerRound& w) const = 0;
  // The most rounds between two sync points in an epoch of `rounds`.
  virtual std::int64_t rounds_between_sync_points(std::int64_t rounds) const = 0;
  // What the batch's summed loss is divided by before its gradient is taken.
  virtual double gradient_divisor(const WorkerRound& w) const = 0;
  // A worker with no sample in the round.
  virtual void on_empty_batch(Replica& replica) const = 0;
  // Turns the round's gradient into an update of the replica, or skips it, or stops the run.
  virtual void update(Replica& replica, const WorkerRound& w) = 0;
  // At a sync point, before the workers meet: the rounds since the last one (window_first_round
  // .. w.round), whose losses are in replica.host_losses.
  virtual void before_meeting(Replica& replica, const WorkerRound& w,
                              std::int64_t window_first_round) = 0;
};

// The strategy of config.parallel.mode for `global_workers` workers of the whole job.
std::unique_ptr<StepStrategy> make_step_strategy(const Config& config, Collective& collective,
                                                 int global_workers);

}  // namespace dl
