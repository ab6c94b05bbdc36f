#include "parallel/parallel_trainer.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/out_of_memory.hpp"
#include "core/thread_start.hpp"
#include "data/epoch_plan.hpp"
#include "optim/learning_rate_schedule.hpp"

namespace dl {

namespace {

// The first failure of any worker, kept to rethrow on the calling thread. A worker that stops
// because another one aborted the collective records nothing.
class FirstFailure {
 public:
  void record(int worker, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_ == nullptr) {
      error_ = error;
      worker_ = worker;
    }
  }
  // Rethrows the failure with the worker named, keeping the exit code of typed errors.
  void rethrow_if_any(int workers) const {
    if (error_ == nullptr) return;
    const std::string who = workers > 1 ? fmt::format("worker {}: ", worker_) : std::string();
    try {
      std::rethrow_exception(error_);
    } catch (const Error& e) {
      throw Error(e.code(), who + e.what());
    } catch (const std::bad_alloc&) {
      // From a library's allocation (oneDNN's scratch) or a task's scratch, which name no
      // AllocationPurpose: the exit code and advice of every out-of-memory error.
      throw Error(ExitCode::kOutOfMemory, who + bad_alloc_message());
    } catch (const std::exception& e) {
      throw Error(ExitCode::kFailure, who + e.what());
    }
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  int worker_ = -1;
};

}  // namespace

ParallelTrainer::ParallelTrainer(const Config& config, const Dataset& train,
                                 const BackendFactory& make_backend,
                                 const CollectiveFactory& make_collective, ProcessGroup& processes)
    : config_(config),
      train_(train),
      processes_(processes),
      first_global_worker_(processes.rank() * config.parallel.workers) {
  const int workers = config.parallel.workers;
  for (int w = 0; w < workers; ++w) {
    auto replica = std::make_unique<Replica>();
    replica->backend = make_backend(w);
    replica->model = std::make_unique<Model>(config, *replica->backend, config.batchSize);
    replica->optimizer = std::make_unique<Optimizer>(
        *replica->backend, config, replica->model->segments(), replica->model->parameter_count(),
        run_rounds(config, train.size(), processes.size()));
    replica->scaler =
        std::make_unique<LossScaler>(effective_loss_scaling_mode(config), config.lossScaling);
    replicas_.push_back(std::move(replica));
  }
  std::vector<Backend*> backends;
  for (const auto& r : replicas_) backends.push_back(r->backend.get());
  collective_ = make_collective(backends);
  DL_CHECK(collective_ != nullptr && collective_->size() == workers,
           "the collective must have one participant per worker");
  strategy_ = make_step_strategy(config, *collective_, global_workers());
  round_loss_.assign(static_cast<std::size_t>(global_workers()), 0.0);
  round_samples_.assign(static_cast<std::size_t>(global_workers()), 0);
  window_loss_.assign(static_cast<std::size_t>(global_workers()), 0.0);
  window_correct_.assign(static_cast<std::size_t>(global_workers()), 0.0);
  window_samples_.assign(static_cast<std::size_t>(global_workers()), 0);
  const std::int64_t rounds = rounds_per_epoch();
  const std::size_t loss_window =
      static_cast<std::size_t>(strategy_->rounds_between_sync_points(rounds));
  data_resident_ = resolve_data_residency(config, train, replicas_.front()->backend->kind());
  // A worker runs at most `rounds` batches of at most batchSize samples per epoch.
  const std::size_t epoch_capacity =
      static_cast<std::size_t>(rounds) * static_cast<std::size_t>(config.batchSize);
  for (auto& r : replicas_) {
    r->round_losses = FloatBuffer(*r->backend, loss_window);
    r->round_correct = FloatBuffer(*r->backend, loss_window);
    r->loss_probe = FloatBuffer(*r->backend, 1);
    r->step_results = FloatBuffer(*r->backend, 2);
    r->recorder = std::make_unique<StepRecorder>(
        *r->backend, config.cuda.graphs && r->model->steps_replayable());
    r->host_losses.resize(loss_window);
    r->host_correct.resize(loss_window);
    if (data_resident_) {
      const AllocationPurpose purpose(
          "the training set on the device (data.deviceResident: never keeps it on the host)");
      r->resident = std::make_unique<ResidentTrainingSet>(*r->backend, train, epoch_capacity);
    }
  }
}

std::string ParallelTrainer::data_placement() const {
  return describe_data_placement(config_, train_, replicas_.front()->backend->kind(),
                                 data_resident_, workers());
}

std::vector<std::string> ParallelTrainer::batch_threads() const {
  std::vector<std::string> names;
  for (int w = 0; w < workers(); ++w) {
    std::vector<std::string> worker =
        batch_source_threads(train_, replicas_.front()->backend->kind(), data_resident_,
                             config_.parallel.prefetchBuffer, config_.batchSize, global(w));
    names.insert(names.end(), worker.begin(), worker.end());
  }
  return names;
}

// The collective goes before the replicas (members would go the other way): a GPU collective
// destroyed while an exception unwinds aborts its NCCL communicator, so NCCL kernels still waiting
// for a peer quit; a backend destroyed first would wait for its stream behind them for ever.
ParallelTrainer::~ParallelTrainer() {
  strategy_.reset();
  collective_.reset();
}

Model& ParallelTrainer::model(int worker) {
  return *replicas_.at(worker)->model;
}
Optimizer& ParallelTrainer::optimizer(int worker) {
  return *replicas_.at(worker)->optimizer;
}
LossScaler& ParallelTrainer::loss_scaler(int worker) {
  return *replicas_.at(worker)->scaler;
}

void ParallelTrainer::initialize(std::uint64_t seed) {
  model(0).initialize(seed);
  replicate_parameters();
}

// Rank 0's replica 0 is the job's start: ranks that initialized alike from the seed agree
// already, but a rank whose math library rounds one initializer differently (another glibc, an
// FMA variant of exp or log) would start apart and stay apart without anything noticing.
void ParallelTrainer::replicate_parameters() {
  if (workers() == 1 && processes_.size() == 1) return;
  std::vector<float> host(model(0).parameter_count());
  model(0).download_parameters(host.data());
  if (processes_.size() > 1) {
    processes_.broadcast(host.data(), host.size() * sizeof(float), 0);
    if (!processes_.is_root()) model(0).upload_parameters(host.data());
  }
  for (int w = 1; w < workers(); ++w) model(w).upload_parameters(host.data());
}

std::int64_t run_rounds(const Config& config, std::int64_t train_samples, int ranks) {
  const EpochPlan plan(train_samples, config.batchSize, ranks * config.parallel.workers,
                       config.seed, 0, config.data.shuffle);
  return static_cast<std::int64_t>(epoch_limit(config)) * plan.rounds();
}

void check_schedule_fits_run(const Config& config, std::int64_t train_samples, int ranks) {
  resolve_schedule_length(config.schedule, run_rounds(config, train_samples, ranks));
}

std::int64_t ParallelTrainer::rounds_per_epoch() const {
  return EpochPlan(train_.size(), config_.batchSize, global_workers(), config_.seed, 0,
                   config_.data.shuffle)
      .rounds();
}

std::int64_t ParallelTrainer::rounds_in_epoch(int epoch) const {
  return EpochPlan(train_.size(), config_.batchSize, global_workers(), config_.seed, 0,
                   config_.data.shuffle, skipped(epoch))
      .rounds();
}

std::int64_t ParallelTrainer::continue_epoch_at(int epoch, std::int64_t position) {
  DL_CHECK(position >= 0 && position <= train_.size(), "epoch position out of range");
  skipped_epoch_ = epoch;
  skipped_ = position % round_size();
  return position / round_size();
}

std::int64_t ParallelTrainer::epoch_position(int epoch, std::int64_t round) const {
  return std::min<std::int64_t>(train_.size(), skipped(epoch) + round * round_size());
}

double ParallelTrainer::lr_multiplier(std::int64_t iteration) const {
  if (config_.parallel.learningRateScaling != LearningRateScaling::kLinear) return 1.0;
  const double target = static_cast<double>(global_workers());
  const std::int64_t warmup = config_.parallel.warmupIterations;
  if (warmup <= 0 || iteration >= warmup) return target;
  return 1.0 + (target - 1.0) * static_cast<double>(iteration + 1) / static_cast<double>(warmup);
}

double ParallelTrainer::learning_rate(std::int64_t iteration) const {
  return replicas_.front()->optimizer->learning_rate(iteration) * lr_multiplier(iteration);
}

std::string worker_thread_name(int w) {
  return fmt::format("worker {}'s thread", w);
}

std::int64_t ParallelTrainer::run_epoch(int epoch, std::int64_t first_round,
                                        std::int64_t& iteration,
                                        const SyncPointCallback& on_sync_point) {
  shared_action_ = SyncAction::kContinue;
  stopped_round_ = -1;
  const std::int64_t rounds = rounds_in_epoch(epoch);
  if (first_round >= rounds) return rounds;
  FirstFailure failure;
  const std::int64_t first_iteration = iteration;
  auto run_worker = [&](int w) {
    try {
      worker_loop(w, epoch, first_round, first_iteration, on_sync_point);
    } catch (const CollectiveAborted&) {
      // Another worker failed first and aborted the collective; its error is the one reported.
    } catch (...) {
      failure.record(w, std::current_exception());
      collective_->abort();
    }
  };
  std::vector<std::thread> threads;
  try {
    for (int w = 1; w < workers(); ++w)
      threads.push_back(start_thread(worker_thread_name(w), [&run_worker, w] { run_worker(w); }));
  } catch (const ThreadStartError&) {
    // The workers already started would wait at their first meeting for the one that is
    // missing: they are released, and joined, before the error leaves.
    collective_->abort();
    for (auto& t : threads) t.join();
    throw;
  }
  run_worker(0);  // the calling thread is worker 0: one thread fewer to switch between
  for (auto& t : threads) t.join();
  failure.rethrow_if_any(workers());
  const std::int64_t next_round = stopped_round_ >= 0 ? stopped_round_ : rounds;
  iteration = first_iteration + (next_round - first_round);
  return next_round;
}

// One worker's rounds first_round.. of `epoch`: next batch, gradient, the strategy's update, and
// at sync points the strategy's part and the meeting.
void ParallelTrainer::worker_loop(int worker, int epoch, std::int64_t first_round,
                                  std::int64_t first_iteration,
                                  const SyncPointCallback& on_sync_point) {
  Replica& r = replica(worker);
  const auto plan =
      std::make_shared<const EpochPlan>(train_.size(), config_.batchSize, global_workers(),
                                        config_.seed, epoch, config_.data.shuffle, skipped(epoch));
  const std::unique_ptr<BatchSource> batches =
      make_batch_source(train_, plan, global(worker), first_round, config_.parallel.prefetchBuffer,
                        *r.model, r.resident.get());
  WorkerRound w;
  w.worker = worker;
  w.global_worker = global(worker);
  w.epoch = epoch;
  w.plan = plan.get();
  std::int64_t window_first_round = first_round;  // the first round since the last sync point
  for (w.round = first_round, w.iteration = first_iteration; w.round < plan->rounds();
       ++w.round, ++w.iteration) {
    const std::size_t slot = static_cast<std::size_t>(w.round - window_first_round);
    DL_CHECK(slot < r.round_losses.size(), "more rounds between sync points than planned");
    w.loss = r.round_losses.data() + slot;
    float* correct = r.round_correct.data() + slot;
    w.samples = batches->next(w.round);
    w.lr_multiplier = lr_multiplier(w.iteration);
    if (w.samples > 0) {
      StepContext ctx;
      ctx.training = true;
      ctx.seed = config_.seed;
      ctx.iteration = static_cast<std::uint64_t>(w.iteration);
      // Dropout's stream is keyed by the global worker, so rank r's worker w draws what worker
      // r x workers + w of one process would, and ranks do not repeat each other's masks.
      ctx.worker = w.global_worker;
      r.compute_gradient(w.samples, strategy_->gradient_divisor(w), ctx, w.loss, correct);
    } else {
      r.backend->fill(w.loss, 1, 0.0f);
      r.backend->fill(correct, 1, 0.0f);
      strategy_->on_empty_batch(r);
    }
    round_samples_[static_cast<std::size_t>(w.global_worker)] = w.samples;
    strategy_->update(r, w);
    if (!strategy_->is_sync_point(w)) continue;
    collect_round_losses(worker, *plan, window_first_round, w.round);
    strategy_->before_meeting(r, w, window_first_round);
    SyncPoint point = sync_point(w, window_first_round);
    window_first_round = w.round + 1;
    if (meet_at_sync_point(worker, point, on_sync_point) == SyncAction::kStop) return;
  }
}

void ParallelTrainer::collect_round_losses(int worker, const EpochPlan& plan,
                                           std::int64_t window_first_round, std::int64_t round) {
  Replica& r = replica(worker);
  const std::size_t count = static_cast<std::size_t>(round - window_first_round + 1);
  r.backend->download(r.host_losses.data(), r.round_losses.data(), count * sizeof(float));
  r.backend->download(r.host_correct.data(), r.round_correct.data(), count * sizeof(float));
  const auto g = static_cast<std::size_t>(global(worker));
  round_loss_[g] = r.host_losses[count - 1];
  window_loss_[g] = 0.0;
  window_correct_[g] = 0.0;
  window_samples_[g] = 0;
  for (std::size_t i = 0; i < count; ++i) {
    window_loss_[g] += r.host_losses[i];
    window_correct_[g] += r.host_correct[i];
    window_samples_[g] += static_cast<std::int64_t>(
        plan.batch(window_first_round + static_cast<std::int64_t>(i), global(worker)).count);
  }
}

SyncPoint ParallelTrainer::sync_point(const WorkerRound& w, std::int64_t window_first_round) const {
  SyncPoint point;
  point.epoch = w.epoch;
  point.round = w.round;
  point.rounds = w.plan->rounds();
  point.iteration = w.iteration + 1;
  point.end_of_epoch = w.round + 1 == point.rounds;
  for (std::int64_t q = window_first_round; q <= w.round; ++q)
    point.samples_since_previous += w.plan->samples_in_round(q);
  point.learning_rate = learning_rate(w.iteration);
  return point;
}

SyncAction ParallelTrainer::meet_at_sync_point(int worker, SyncPoint& point,
                                               const SyncPointCallback& callback) {
  collective_->barrier(worker);  // every local worker has written its entry of this round
  if (worker == 0) {
    const OutsideRequests mine = outside_requests_ ? outside_requests_() : OutsideRequests{};
    point.requests = processes_.size() > 1 ? sum_tables_over_processes(mine) : mine;
    point.loss_sum = round_loss_;
    point.samples = round_samples_;
    point.window_loss_sum = window_loss_;
    point.window_correct = window_correct_;
    point.window_samples = window_samples_;
    int action = static_cast<int>(SyncAction::kContinue);
    if (processes_.is_root()) action = static_cast<int>(callback(point));
    shared_action_ = static_cast<SyncAction>(share_decision(action));
    stopped_round_ = shared_action_ == SyncAction::kStop ? point.round + 1 : -1;
  }
  collective_->barrier(worker);  // every local worker sees the decision
  return shared_action_;
}

// Each process contributes its own workers' entries (zeros elsewhere); the sum over processes is
// then the whole group's table. Every rank's outside requests ride along (outside_requests.hpp).
OutsideRequests ParallelTrainer::sum_tables_over_processes(const OutsideRequests& mine) {
  const std::size_t g = round_loss_.size();
  constexpr std::size_t kTables = 5;
  const int ranks = processes_.size();
  std::vector<double> table(kTables * g + static_cast<std::size_t>(outside_request_slots(ranks)));
  put_outside_requests(mine, processes_.rank(), ranks, &table[kTables * g]);
  for (int w = 0; w < workers(); ++w) {
    const auto i = static_cast<std::size_t>(global(w));
    table[i] = round_loss_[i];
    table[g + i] = static_cast<double>(round_samples_[i]);
    table[2 * g + i] = window_loss_[i];
    table[3 * g + i] = window_correct_[i];
    table[4 * g + i] = static_cast<double>(window_samples_[i]);
  }
  processes_.all_reduce_sum(table.data(), table.size());
  for (std::size_t i = 0; i < g; ++i) {
    round_loss_[i] = table[i];
    round_samples_[i] = static_cast<std::int64_t>(table[g + i]);
    window_loss_[i] = table[2 * g + i];
    window_correct_[i] = table[3 * g + i];
    window_samples_[i] = static_cast<std::int64_t>(table[4 * g + i]);
  }
  return take_outside_requests(&table[kTables * g], ranks);
}

}  // namespace dl
