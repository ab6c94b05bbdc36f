#include "parallel/parallel_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "backend/device_buffer.hpp"
#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "data/batch_loader.hpp"
#include "data/epoch_plan.hpp"

namespace dl {

struct ParallelTrainer::Replica {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LossScaler> scaler;
  FloatBuffer round_losses;        // the summed loss of each round since the last sync point
  FloatBuffer loss_probe;          // synchronous overflow: the workers' losses, summed
  std::vector<float> host_losses;  // round_losses read back at a sync point
  // Resident data path only: the training set, and this worker's sample indices of the rounds
  // still to run in the current epoch (room for a whole epoch, allocated once).
  DeviceBuffer<std::uint8_t> resident_pixels;
  IndexBuffer resident_labels;
  IndexBuffer epoch_indices;
  std::vector<std::int32_t> host_indices;  // staging for epoch_indices, reused every epoch
};

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
    } catch (const std::exception& e) {
      throw Error(ExitCode::kFailure, who + e.what());
    }
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  int worker_ = -1;
};

// The bytes a resident training set occupies in each worker's backend.
std::uint64_t resident_bytes(const Dataset& data) {
  return data.pixels().size() + data.labels().size() * sizeof(std::int32_t);
}

// Sample indices travel to the backend as int32.
bool indices_fit_int32(const Dataset& data) {
  return data.size() <= std::numeric_limits<std::int32_t>::max();
}

DivergenceError non_finite_error(int epoch, std::int64_t iteration, const char* what) {
  return DivergenceError(
      fmt::format("epoch {}, iteration {}: the {} is not finite (NaN or Inf); lower "
                  "updater.learningRate, or set onNonFiniteLoss: skip to drop such batches",
                  epoch, iteration, what));
}

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
        config.epochs * rounds_per_epoch());
    replica->scaler =
        std::make_unique<LossScaler>(effective_loss_scaling_mode(config), config.lossScaling);
    replicas_.push_back(std::move(replica));
  }
  std::vector<Backend*> backends;
  for (const auto& r : replicas_) backends.push_back(r->backend.get());
  collective_ = make_collective(backends);
  DL_CHECK(collective_ != nullptr && collective_->size() == workers,
           "the collective must have one participant per worker");
  round_loss_.assign(static_cast<std::size_t>(global_workers()), 0.0);
  round_samples_.assign(static_cast<std::size_t>(global_workers()), 0);
  if (!every_round_is_sync_point()) {
    loss_window_ = static_cast<std::size_t>(
        std::min<std::int64_t>(config.parallel.averagingFrequency, rounds_per_epoch()));
  }
  for (auto& r : replicas_) {
    r->round_losses = FloatBuffer(*r->backend, loss_window_);
    r->loss_probe = FloatBuffer(*r->backend, 1);
    r->host_losses.resize(loss_window_);
  }
  data_resident_ = resolve_data_residency();
  if (data_resident_) upload_training_set();
}

bool ParallelTrainer::resolve_data_residency() const {
  switch (config_.data.deviceResident) {
    case DeviceResidency::kNever:
      return false;
    case DeviceResidency::kAlways:
      if (!indices_fit_int32(train_)) {
        throw ConfigError(
            fmt::format("data.deviceResident: always, but the training set has {} samples, more "
                        "than the {} a resident set can index; set data.deviceResident: never or "
                        "auto, or a data.trainLimit",
                        train_.size(), std::numeric_limits<std::int32_t>::max()));
      }
      return true;
    case DeviceResidency::kAuto:
      return replicas_.front()->backend->kind() == BackendKind::kCuda &&
             indices_fit_int32(train_) &&
             resident_bytes(train_) <= config_.memory.maximumDeviceCacheableLength;
  }
  return false;
}

void ParallelTrainer::upload_training_set() {
  // A worker runs at most rounds_per_epoch() batches of at most batchSize samples per epoch.
  const std::size_t epoch_capacity =
      static_cast<std::size_t>(rounds_per_epoch()) * static_cast<std::size_t>(config_.batchSize);
  for (auto& r : replicas_) {
    r->resident_pixels = DeviceBuffer<std::uint8_t>(*r->backend, train_.pixels().size());
    r->resident_labels = IndexBuffer(*r->backend, train_.labels().size());
    r->backend->upload(r->resident_pixels.data(), train_.pixels().data(),
                       r->resident_pixels.bytes());
    r->backend->upload(r->resident_labels.data(), train_.labels().data(),
                       r->resident_labels.bytes());
    r->epoch_indices = IndexBuffer(*r->backend, epoch_capacity);
    r->host_indices.reserve(epoch_capacity);
  }
}

std::string ParallelTrainer::data_placement() const {
  const std::uint64_t bytes = resident_bytes(train_);
  const std::string_view setting = enum_name(config_.data.deviceResident);
  if (data_resident_) {
    return fmt::format(
        "data: resident in backend memory (data.deviceResident: {}): {} bytes of pixels and "
        "labels uploaded once per worker ({} in all); batches gathered there",
        setting, bytes, bytes * replicas_.size());
  }
  std::string why;
  if (config_.data.deviceResident == DeviceResidency::kAuto) {
    why = replicas_.front()->backend->kind() != BackendKind::kCuda
              ? "; auto keeps it on the host for a CPU backend"
          : !indices_fit_int32(train_)
              ? fmt::format("; its {} samples are more than int32 indices reach", train_.size())
              : fmt::format(
                    "; the training set's {} bytes exceed "
                    "memory.maximumDeviceCacheableLength ({} bytes)",
                    bytes, config_.memory.maximumDeviceCacheableLength);
  }
  return fmt::format(
      "data: host loader (data.deviceResident: {}{}): each batch converted on the host and "
      "uploaded every round",
      setting, why);
}

void ParallelTrainer::upload_epoch_indices(int worker, const EpochPlan& plan,
                                           std::int64_t first_round) {
  Replica& r = *replicas_[static_cast<std::size_t>(worker)];
  r.host_indices.clear();
  for (std::int64_t round = first_round; round < plan.rounds(); ++round) {
    const EpochPlan::Slice slice = plan.batch(round, global(worker));
    for (std::size_t i = 0; i < slice.count; ++i) {
      r.host_indices.push_back(static_cast<std::int32_t>(slice.indices[i]));
    }
  }
  DL_CHECK(r.host_indices.size() <= r.epoch_indices.size(),
           "a worker's epoch has no more samples than rounds x batchSize");
  r.backend->upload(r.epoch_indices.data(), r.host_indices.data(),
                    r.host_indices.size() * sizeof(std::int32_t));
}

ParallelTrainer::~ParallelTrainer() = default;

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

void ParallelTrainer::replicate_parameters() {
  if (workers() == 1) return;
  std::vector<float> host(model(0).parameter_count());
  model(0).download_parameters(host.data());
  for (int w = 1; w < workers(); ++w) model(w).upload_parameters(host.data());
}

std::int64_t ParallelTrainer::rounds_per_epoch() const {
  return EpochPlan(train_.size(), config_.batchSize, global_workers(), config_.seed, 0,
                   config_.data.shuffle)
      .rounds();
}

bool ParallelTrainer::every_round_is_sync_point() const {
  return config_.parallel.mode == ParallelMode::kSynchronous || global_workers() == 1;
}

bool ParallelTrainer::is_sync_point(std::int64_t round, std::int64_t rounds) const {
  if (every_round_is_sync_point()) return true;
  return (round + 1) % config_.parallel.averagingFrequency == 0 || round + 1 == rounds;
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

std::int64_t ParallelTrainer::run_epoch(int epoch, std::int64_t first_round,
                                        std::int64_t& iteration,
                                        const SyncPointCallback& on_sync_point) {
  shared_action_ = SyncAction::kContinue;
  stopped_round_ = -1;
  const std::int64_t rounds = rounds_per_epoch();
  if (first_round >= rounds) return rounds;
  std::int64_t next_round = rounds;
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
  for (int w = 1; w < workers(); ++w) threads.emplace_back(run_worker, w);
  run_worker(0);  // the calling thread is worker 0: one thread fewer to switch between
  for (auto& t : threads) t.join();
  failure.rethrow_if_any(workers());
  next_round = stopped_round_ >= 0 ? stopped_round_ : rounds;
  iteration = first_iteration + (next_round - first_round);
  return next_round;
}

void ParallelTrainer::average_replicas(int worker, std::int64_t window_first_round,
                                       std::int64_t round, const EpochPlan& plan) {
  if (global_workers() == 1) return;
  std::int64_t total = 0;
  std::int64_t mine = 0;
  for (std::int64_t q = window_first_round; q <= round; ++q) {
    total += plan.samples_in_round(q);
    mine += static_cast<std::int64_t>(plan.batch(q, global(worker)).count);
  }
  const float weight = total > 0 ? static_cast<float>(static_cast<double>(mine) / total)
                                 : 1.0f / static_cast<float>(global_workers());
  Replica& r = *replicas_[static_cast<std::size_t>(worker)];
  const std::size_t n = r.model->parameter_count();
  r.backend->scale(n, weight, r.model->parameters());
  collective_->all_reduce_sum(worker, r.model->parameters(), n);
  if (config_.parallel.averageUpdaters && r.optimizer->state_floats() > 0) {
    r.backend->scale(r.optimizer->state_floats(), weight, r.optimizer->state());
    collective_->all_reduce_sum(worker, r.optimizer->state(), r.optimizer->state_floats());
  }
}

SyncAction ParallelTrainer::meet_at_sync_point(int worker, SyncPoint& point,
                                               const SyncPointCallback& callback) {
  collective_->barrier(worker);  // every local worker has written its entry of this round
  if (worker == 0) {
    const std::size_t g = round_loss_.size();
    if (processes_.size() > 1) {
      // Each process contributes its own workers' entries (zeros elsewhere); the sum over
      // processes is then the whole group's table.
      std::vector<double> table(2 * g, 0.0);
      for (int w = 0; w < workers(); ++w) {
        const std::size_t i = static_cast<std::size_t>(global(w));
        table[i] = round_loss_[i];
        table[g + i] = static_cast<double>(round_samples_[i]);
      }
      processes_.all_reduce_sum(table.data(), table.size());
      for (std::size_t i = 0; i < g; ++i) {
        round_loss_[i] = table[i];
        round_samples_[i] = static_cast<std::int64_t>(table[g + i]);
      }
    }
    point.loss_sum = round_loss_;
    point.samples = round_samples_;
    int action = static_cast<int>(SyncAction::kContinue);
    if (processes_.is_root()) action = static_cast<int>(callback(point));
    processes_.broadcast(&action, sizeof(action), 0);
    shared_action_ = static_cast<SyncAction>(action);
    stopped_round_ = shared_action_ == SyncAction::kStop ? point.round + 1 : -1;
  }
  collective_->barrier(worker);  // every local worker sees the decision
  return shared_action_;
}

bool ParallelTrainer::group_loss_finite(int worker, const float* own_loss) {
  Replica& r = *replicas_[static_cast<std::size_t>(worker)];
  r.backend->copy(r.loss_probe.data(), own_loss, sizeof(float));
  collective_->all_reduce_sum(worker, r.loss_probe.data(), 1);
  return r.backend->all_finite(1, r.loss_probe.data());
}

void ParallelTrainer::collect_round_losses(int worker, int epoch, std::int64_t window_first_round,
                                           std::int64_t round, std::int64_t iteration) {
  Replica& r = *replicas_[static_cast<std::size_t>(worker)];
  const std::size_t count = static_cast<std::size_t>(round - window_first_round + 1);
  const auto losses = r.host_losses.begin();
  r.backend->download(r.host_losses.data(), r.round_losses.data(), count * sizeof(float));
  round_loss_[static_cast<std::size_t>(global(worker))] = losses[count - 1];
  // Averaging mode applies a step without looking at its loss (so the step need not wait for
  // it); a non-finite one stops the run here, before the replicas are averaged or saved, naming
  // the round where it first went bad. Synchronous mode judges the summed gradient instead.
  const bool check = config_.parallel.mode == ParallelMode::kAveraging &&
                     config_.onNonFiniteLoss == NonFiniteAction::kStop;
  if (!check) return;
  const auto end = losses + static_cast<std::ptrdiff_t>(count);
  const auto bad = std::find_if(losses, end, [](float loss) { return !std::isfinite(loss); });
  if (bad == end) return;
  const std::int64_t bad_iteration =
      iteration - static_cast<std::int64_t>(count) + 1 + (bad - losses);
  throw non_finite_error(epoch, bad_iteration, "training loss");
}

void ParallelTrainer::worker_loop(int worker, int epoch, std::int64_t first_round,
                                  std::int64_t first_iteration,
                                  const SyncPointCallback& on_sync_point) {
  Replica& rep = *replicas_[static_cast<std::size_t>(worker)];
  Backend& backend = *rep.backend;
  Model& model = *rep.model;
  Optimizer& optimizer = *rep.optimizer;
  LossScaler& scaler = *rep.scaler;
  const bool synchronous = config_.parallel.mode == ParallelMode::kSynchronous;
  const bool skip_non_finite = config_.onNonFiniteLoss == NonFiniteAction::kSkip;
  const auto plan =
      std::make_shared<const EpochPlan>(train_.size(), config_.batchSize, global_workers(),
                                        config_.seed, epoch, config_.data.shuffle);
  const std::int64_t rounds = plan->rounds();
  // Exactly one of the two data paths (see the header).
  std::unique_ptr<BatchLoader> loader;
  if (data_resident_) {
    upload_epoch_indices(worker, *plan, first_round);
  } else {
    loader = std::make_unique<BatchLoader>(train_, plan, global(worker), first_round,
                                           config_.parallel.prefetchBuffer);
  }
  std::size_t resident_offset = 0;  // this round's first entry of rep.epoch_indices
  // Puts the round's batch into the model's input and labels; returns its sample count.
  const auto load_batch = [&](std::int64_t round) -> int {
    if (data_resident_) {
      const int n = static_cast<int>(plan->batch(round, global(worker)).count);
      backend.gather_samples(rep.resident_pixels.data(), rep.resident_labels.data(),
                             train_.sample_floats(), rep.epoch_indices.data() + resident_offset, n,
                             model.input(), model.labels());
      resident_offset += static_cast<std::size_t>(n);
      return n;
    }
    const HostBatch* batch = loader->next();
    DL_CHECK(batch != nullptr && batch->round == round, "the loader fell out of step");
    const int n = static_cast<int>(batch->count);
    if (n > 0) {
      backend.upload(model.input(), batch->images.data(),
                     n * train_.sample_floats() * sizeof(float));
      backend.upload(model.labels(), batch->labels.data(), n * sizeof(std::int32_t));
    }
    return n;
  };
  const std::size_t params = model.parameter_count();

  // The gradients of an accepted step, unscaled, go to the updater.
  const auto apply_step = [&](std::int64_t iteration) {
    if (scaler.enabled()) backend.scale(params, scaler.inverse_scale(), model.gradients());
    optimizer.step(model.parameters(), model.gradients(), iteration, lr_multiplier(iteration));
    if (scaler.dynamic()) scaler.on_good_step();
  };
  const auto on_overflow = [&](std::int64_t iteration) {
    try {
      scaler.on_overflow();
    } catch (const DivergenceError& e) {
      throw DivergenceError(fmt::format("epoch {}, iteration {}: {}", epoch, iteration, e.what()));
    }
  };
  const auto host_loss = [&](const float* device_loss) {
    float loss = 0.0f;
    backend.download(&loss, device_loss, sizeof(float));
    return loss;
  };

  std::int64_t iteration = first_iteration;
  std::int64_t window_first_round = first_round;  // first round since the last averaging
  std::int64_t sync_window_first_round = first_round;
  for (std::int64_t round = first_round; round < rounds; ++round, ++iteration) {
    const std::size_t slot = static_cast<std::size_t>(round - sync_window_first_round);
    DL_CHECK(slot < rep.round_losses.size(), "more rounds between sync points than planned");
    float* round_loss = rep.round_losses.data() + slot;
    const int n = load_batch(round);
    if (n > 0) {
      StepContext ctx;
      ctx.training = true;
      ctx.seed = config_.seed;
      ctx.iteration = static_cast<std::uint64_t>(iteration);
      ctx.worker = worker;
      model.forward(n, ctx);
      // Synchronous: pre-scale by the round's sample count so the all-reduced sum is the mean
      // gradient over the whole round. Averaging: the mean over this worker's batch.
      const double denominator = synchronous ? plan->samples_in_round(round) : n;
      const float mean_scale = static_cast<float>(1.0 / denominator);
      model.backward(
          n, scaler.enabled() ? mean_scale * static_cast<float>(scaler.scale()) : mean_scale);
      backend.copy(round_loss, model.loss_sum(), sizeof(float));
    } else {
      backend.fill(round_loss, 1, 0.0f);
      if (synchronous) backend.fill(model.gradients(), params, 0.0f);
    }
    round_samples_[static_cast<std::size_t>(global(worker))] = n;

    if (synchronous) {
      collective_->all_reduce_sum(worker, model.gradients(), params);
      // Every replica holds the same summed gradient, so every replica takes the same decision.
      if (backend.all_finite(params, model.gradients())) {
        apply_step(iteration);
      } else if (!scaler.dynamic()) {
        if (!skip_non_finite) throw non_finite_error(epoch, iteration, "gradient");
      } else if (group_loss_finite(worker, round_loss)) {
        on_overflow(iteration);
      } else if (!skip_non_finite) {
        throw non_finite_error(epoch, iteration, "training loss");
      }
      // Batch-norm running statistics are updated by each replica's forward pass; average them
      // (weighted by samples) so the replicas stay identical.
      const double round_samples = static_cast<double>(plan->samples_in_round(round));
      for (const ParameterSegment& s : model.segments()) {
        if (s.trainable) continue;
        backend.scale(s.count, static_cast<float>(n / round_samples),
                      model.parameters() + s.offset);
        collective_->all_reduce_sum(worker, model.parameters() + s.offset, s.count);
      }
    } else {
      // Skipping a non-finite loss needs its value now; stopping on one waits for the sync point.
      if (n > 0 && !(skip_non_finite && !std::isfinite(host_loss(round_loss)))) {
        if (!scaler.dynamic() || backend.all_finite(params, model.gradients())) {
          apply_step(iteration);
        } else if (std::isfinite(host_loss(round_loss))) {
          on_overflow(iteration);
        } else {
          throw non_finite_error(epoch, iteration, "training loss");
        }
      }
    }

    if (is_sync_point(round, rounds)) {
      collect_round_losses(worker, epoch, sync_window_first_round, round, iteration);
      if (!synchronous) {
        average_replicas(worker, window_first_round, round, *plan);
        window_first_round = round + 1;
      }
      SyncPoint point;
      point.epoch = epoch;
      point.round = round;
      point.rounds = rounds;
      point.iteration = iteration + 1;
      point.end_of_epoch = round + 1 == rounds;
      for (std::int64_t q = sync_window_first_round; q <= round; ++q) {
        point.samples_since_previous += plan->samples_in_round(q);
      }
      point.learning_rate = learning_rate(iteration);
      meet_at_sync_point(worker, point, on_sync_point);
      sync_window_first_round = round + 1;
      if (shared_action_ == SyncAction::kStop) return;
    }
  }
}

}  // namespace dl
