// Data-parallel training of N replicas (DL4J's ParallelWrapper, TensorFlow's MirroredStrategy),
// independent of where the replicas live: each worker has its own thread and Replica (Backend,
// Model, Optimizer, loss scaler; parallel/replica.hpp) for the whole run, and talks to the others
// only through the Collective.
//
// Rounds: round r of an epoch gives worker w the w-th batch of the next workers*batchSize
// positions of the epoch's order (data/epoch_plan.hpp). Each worker runs the same loop over
//  - a batch source (parallel/batch_source.hpp): the host loader or the device-resident training
//    set, chosen by data.deviceResident, bit-identical either way, and
//  - a step strategy (parallel/step_strategy.hpp): synchronous (gradients all-reduced every
//    round) or averaging (each replica steps alone; parameters averaged every
//    averagingFrequency rounds and at the end of each epoch), which also decides what an
//    overflow or a non-finite loss does.
// Sync points are the rounds after which every replica is in a state that can be reported and
// saved (the strategy says which). At a sync point all workers meet, worker 0 runs the caller's
// callback (scores, checkpoints, stop requests), and all workers then continue or stop together.
//
// Each round's loss stays in backend memory (one float per round since the last sync point) and
// is read back only at sync points, so a step does not wait for the host unless a decision needs
// a value (finite gradients, onNonFiniteLoss: skip).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "config/config.hpp"
#include "data/dataset.hpp"
#include "nn/model.hpp"
#include "optim/loss_scaler.hpp"
#include "optim/optimizer.hpp"
#include "parallel/collective.hpp"
#include "parallel/process_group.hpp"
#include "parallel/outside_requests.hpp"
#include "parallel/replica.hpp"
#include "parallel/replica_states.hpp"
#include "parallel/step_strategy.hpp"

namespace dl {

struct SyncPoint {
  int epoch = 0;
  std::int64_t round = 0;      // the round just finished (0-based within the epoch)
  std::int64_t rounds = 0;     // rounds in this epoch
  std::int64_t iteration = 0;  // global rounds finished so far, this one included
  bool end_of_epoch = false;
  // This round's summed loss and sample count per worker of the whole group (global index:
  // process rank x local workers + local worker).
  std::vector<double> loss_sum;
  std::vector<std::int64_t> samples;
  // All workers' samples in the rounds since the previous sync point, this round included.
  std::int64_t samples_since_previous = 0;
  // Per worker of the whole group, over the rounds since the previous sync point (this one
  // included): the summed loss, the correct predictions and the samples (the epoch's training
  // loss and accuracy add these up).
  std::vector<double> window_loss_sum, window_correct;
  std::vector<std::int64_t> window_samples;
  double learning_rate = 0.0;
  // What every rank of the job was asked from outside since the previous sync point.
  OutsideRequests requests;
};

enum class SyncAction { kContinue, kStop };
using SyncPointCallback = std::function<SyncAction(const SyncPoint&)>;

using BackendFactory = std::function<std::unique_ptr<Backend>(int worker)>;
// Makes the collective once the workers' backends exist (a GPU collective needs their devices
// and streams); `local_backends[w]` is local worker w's.
using CollectiveFactory =
    std::function<std::unique_ptr<Collective>(const std::vector<Backend*>& local_backends)>;

// How a refused start names local worker w's thread (worker 0 is the calling thread).
std::string worker_thread_name(int w);

// The rounds (optimizer steps) of a whole run of `config` on `train_samples` samples over `ranks`
// processes: what a learning-rate schedule without totalIterations spans.
std::int64_t run_rounds(const Config& config, std::int64_t train_samples, int ranks);
// The learning-rate schedule against that length, as the trainer's optimizers check it: a
// ConfigError for a warm-up as long as the run (validate passed one that training refused).
void check_schedule_fits_run(const Config& config, std::int64_t train_samples, int ranks);

class ParallelTrainer {
 public:
  // `processes` spans the job's processes (a single process unless under MPI); this process runs
  // config.parallel.workers local workers, global indices rank*workers ... rank*workers+workers-1.
  // The callback of run_epoch runs on process 0 only; its decision reaches every process.
  // `config`, `train` and `processes` are kept by reference and must outlive the trainer.
  ParallelTrainer(const Config& config, const Dataset& train, const BackendFactory& make_backend,
                  const CollectiveFactory& make_collective, ProcessGroup& processes);
  ~ParallelTrainer();

  int workers() const { return static_cast<int>(replicas_.size()); }  // in this process
  // From the config, not the replicas: valid while the constructor builds them.
  int global_workers() const { return config_.parallel.workers * processes_.size(); }
  int ranks() const { return processes_.size(); }
  // The job-wide index of this process's local worker.
  int global(int local_worker) const { return first_global_worker_ + local_worker; }
  Model& model(int worker);
  Optimizer& optimizer(int worker);
  // Local worker's loss scale (mode none: always 1); its state goes into checkpoints.
  LossScaler& loss_scaler(int worker);
  // Local worker's recorder of the step's fixed-shape part: whether it records, how often it
  // replayed.
  const StepRecorder& step_recorder(int worker) const { return *replicas_.at(worker)->recorder; }
  const Collective& collective() const { return *collective_; }
  // Whether the training set is resident in the workers' backends (see above).
  bool data_resident() const { return data_resident_; }
  // One line for the start-up log: which data path is used, why, and the bytes uploaded.
  std::string data_placement() const;
  // The threads the workers' batch sources start once training begins, as they are named
  // (batch_source_threads), so that a run can start them once before it claims its directory.
  std::vector<std::string> batch_threads() const;

  // Initializes replica 0 from the seed and copies it to the others.
  void initialize(std::uint64_t seed);
  // Copies replica 0's parameters into every other replica, rank 0's into every rank's
  // (collective over the processes).
  void replicate_parameters();

  std::int64_t rounds_per_epoch() const;
  std::int64_t epoch_samples() const { return train_.size(); }  // the training set's
  // Rounds of `epoch`: rounds_per_epoch(), less in an epoch resumed part-way (continue_epoch_at).
  std::int64_t rounds_in_epoch(int epoch) const;
  // Resume: `epoch` goes on after the first `position` samples of its order, trained under this
  // layout or another (ranks x workers). Returns the round to start at; the epoch's rounds are
  // laid out from position mod the round size, so a position on a round boundary of this layout
  // keeps the epoch's usual rounds.
  std::int64_t continue_epoch_at(int epoch, std::int64_t position);
  // The samples of epoch's order trained before its round `round` (what a checkpoint records,
  // so that any layout can continue from it).
  std::int64_t epoch_position(int epoch, std::int64_t round) const;
  // Runs rounds first_round.. of `epoch`; `iteration` (global rounds done) is advanced. Returns
  // the next round to run: rounds_per_epoch() when the epoch completed, less when the callback
  // asked to stop. A worker's failure stops all of them and is rethrown here naming the worker.
  std::int64_t run_epoch(int epoch, std::int64_t first_round, std::int64_t& iteration,
                         const SyncPointCallback& on_sync_point);

  // The scheduled learning rate times the warm-up multiplier, for reports.
  double learning_rate(std::int64_t iteration) const;

  // Whether every replica holds the same updater state at sync points (synchronous mode, or
  // averaged updaters), so that a checkpoint needs one copy.
  bool replicas_share_updater_state() const;
  // On rank 0, at a sync point or an epoch's end: the updater and loss-scale states of every
  // replica of the job. The other ranks hand theirs over while they wait in share_decision.
  ReplicaStates replica_states();
  // Rank 0 passes `decision` (>= 0) to every rank and every rank returns it. Until it arrives,
  // the other ranks serve rank 0's requests for their replicas' states (replica_states), so
  // that a checkpoint rank 0 writes before deciding holds every rank's replicas.
  int share_decision(int decision);
  // Where worker 0 of each rank reads its process's requests at every sync point (taking them:
  // a checkpoint request is answered once); none set: no requests.
  void set_outside_requests(std::function<OutsideRequests()> read) {
    outside_requests_ = std::move(read);
  }

 private:
  Replica& replica(int worker) { return *replicas_[static_cast<std::size_t>(worker)]; }
  void worker_loop(int worker, int epoch, std::int64_t first_round, std::int64_t first_iteration,
                   const SyncPointCallback& on_sync_point);
  double lr_multiplier(std::int64_t iteration) const;
  std::int64_t skipped(int epoch) const { return epoch == skipped_epoch_ ? skipped_ : 0; }
  std::int64_t round_size() const {
    return static_cast<std::int64_t>(config_.batchSize) * global_workers();
  }
  // This process's replicas' states (every local worker's, or none of the shared updater
  // state's unless this is global worker 0).
  ReplicaStates local_replica_states();
  // The losses and correct counts of rounds window_first_round..round, read back into the
  // replica's host_losses and host_correct; the last loss is the worker's entry of this round's
  // loss table, their sums its entries of the window tables.
  void collect_round_losses(int worker, const EpochPlan& plan, std::int64_t window_first_round,
                            std::int64_t round);
  SyncPoint sync_point(const WorkerRound& w, std::int64_t window_first_round) const;
  SyncAction meet_at_sync_point(int worker, SyncPoint& point, const SyncPointCallback& callback);
  // Returns the job's requests, given this process's.
  OutsideRequests sum_tables_over_processes(const OutsideRequests& mine);

  const Config& config_;
  const Dataset& train_;
  std::unique_ptr<Collective> collective_;
  std::unique_ptr<StepStrategy> strategy_;
  ProcessGroup& processes_;
  int first_global_worker_ = 0;
  std::vector<std::unique_ptr<Replica>> replicas_;
  // Indexed by global worker; each local worker writes its own entry in a round, worker 0 reads
  // them at sync points (the barrier orders the accesses) after summing them over processes.
  std::vector<double> round_loss_;
  std::vector<std::int64_t> round_samples_;
  std::vector<double> window_loss_, window_correct_;
  std::vector<std::int64_t> window_samples_;
  SyncAction shared_action_ = SyncAction::kContinue;
  std::int64_t stopped_round_ = -1;  // the next round to run when the callback stopped the epoch
  // continue_epoch_at: positions of epoch skipped_epoch_'s order before its first round.
  int skipped_epoch_ = -1;
  std::int64_t skipped_ = 0;
  bool data_resident_ = false;
  std::function<OutsideRequests()> outside_requests_;
};

}  // namespace dl
