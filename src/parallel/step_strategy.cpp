#include "parallel/step_strategy.hpp"

#include <algorithm>
#include <cmath>

namespace dl {

namespace {

// DESIGN.md, parallel semantics: "synchronous mode (MirroredStrategy / DDP): gradients are
// all-reduced every step over the flat buffer, so N workers behave like one worker with N times
// the batch." Each worker's gradient is pre-scaled by 1/(samples in the round), so the sum is the
// mean gradient of the whole round: N workers x batch B take exactly the step of 1 worker x batch
// N*B. Every replica then holds the same summed gradient and takes the same decision, and stays
// identical; every round is a sync point.
class SynchronousStep final : public StepStrategy {
 public:
  SynchronousStep(const Config& config, Collective& collective)
      : skip_non_finite_(config.onNonFiniteLoss == NonFiniteAction::kSkip),
        collective_(collective) {}

  bool is_sync_point(const WorkerRound&) const override { return true; }
  std::int64_t rounds_between_sync_points(std::int64_t) const override { return 1; }
  double gradient_divisor(const WorkerRound& w) const override {
    return static_cast<double>(w.plan->samples_in_round(w.round));
  }
  // A worker without samples still takes part in the all-reduce, with a zero gradient.
  void on_empty_batch(Replica& r) const override {
    r.backend->fill(r.model->gradients(), r.parameter_count(), 0.0f);
  }

  // Loss scaling: "dynamic scaling skips a step whose gradients overflow (not a divergence; a
  // non-finite loss still is)". The summed gradient is judged, so all replicas decide alike: a
  // finite one is applied; without dynamic scaling a non-finite one is a divergence (or skipped,
  // onNonFiniteLoss: skip); with it, a finite summed loss means an overflow (skip, shrink the
  // scale), a non-finite one a divergence.
  void update(Replica& r, const WorkerRound& w) override {
    const std::size_t params = r.parameter_count();
    collective_.all_reduce_sum(w.worker, r.model->gradients(), params);
    if (r.backend->all_finite(params, r.model->gradients())) {
      r.apply_step(w.iteration, w.lr_multiplier);
    } else if (!r.scaler->dynamic()) {
      if (!skip_non_finite_) throw non_finite_error(w.epoch, w.iteration, "gradient");
      r.scaler->on_non_finite_skip();
    } else if (group_loss_finite(r, w)) {
      r.on_overflow(w.epoch, w.iteration);
    } else if (!skip_non_finite_) {
      throw non_finite_error(w.epoch, w.iteration, "training loss");
    } else {
      r.scaler->on_non_finite_skip();
    }
    average_running_statistics(r, w);
  }

  void before_meeting(Replica&, const WorkerRound&, std::int64_t) override {}

 private:
  // Whether the round's loss is finite on all workers.
  bool group_loss_finite(Replica& r, const WorkerRound& w) {
    r.backend->copy(r.loss_probe.data(), w.loss, sizeof(float));
    collective_.all_reduce_sum(w.worker, r.loss_probe.data(), 1);
    return r.backend->all_finite(1, r.loss_probe.data());
  }

  // Batch-norm running statistics are updated by each replica's forward pass; they are averaged
  // (weighted by samples) so the replicas stay identical.
  void average_running_statistics(Replica& r, const WorkerRound& w) {
    const double round_samples = static_cast<double>(w.plan->samples_in_round(w.round));
    for (const ParameterSegment& s : r.model->segments()) {
      if (s.trainable) continue;
      float* values = r.model->parameters() + s.offset;
      r.backend->scale(s.count, static_cast<float>(w.samples / round_samples), values);
      collective_.all_reduce_sum(w.worker, values, s.count);
    }
  }

  bool skip_non_finite_;
  Collective& collective_;
};

// A single worker has nothing to average, so its sync points serve the listeners alone: it meets
// them where they act on an iteration (every output.scoreEveryIterations and
// output.checkpointEveryIterations, counted in global iterations as the listeners count) and at
// the end of each epoch. In between, the backend runs ahead without waiting for the host (on a GPU
// the step queue never drains), and every row the listeners write is the one a sync point per
// round would give. Early stopping's iteration conditions judge the score of every round (as
// DL4J's do), so with early stopping on, every round stays a sync point.
class ListenerWindow {
 public:
  ListenerWindow() = default;
  explicit ListenerWindow(const Config& config)
      : score_every_(config.earlyStopping.enabled ? 1 : config.output.scoreEveryIterations),
        checkpoint_every_(config.output.checkpointEveryIterations) {}

  bool active() const { return score_every_ > 0; }
  bool is_sync_point(std::int64_t iteration) const {
    const std::int64_t done = iteration + 1;  // the iteration count the listeners see
    return done % score_every_ == 0 || (checkpoint_every_ > 0 && done % checkpoint_every_ == 0);
  }
  // Every multiple of score_every_ is a sync point, so no window is longer.
  std::int64_t longest() const { return score_every_; }

 private:
  std::int64_t score_every_ = 0;  // 0: inactive (several workers average at their own points)
  std::int64_t checkpoint_every_ = 0;
};

// DESIGN.md, parallel semantics: "averaging mode (DL4J's default): each worker takes whole
// minibatches; every averagingFrequency steps parameters (and updater state when averageUpdaters)
// are averaged, weighted by the samples each worker saw. Replicas live across epochs; the epoch
// always ends averaged, also when the last round is short." The averaging rounds are the sync
// points (every round with a single worker, where there is nothing to average).
class AveragingStep final : public StepStrategy {
 public:
  AveragingStep(const Config& config, Collective& collective, int global_workers)
      : frequency_(config.parallel.averagingFrequency),
        listener_window_(global_workers == 1 ? ListenerWindow(config) : ListenerWindow()),
        average_updaters_(config.parallel.averageUpdaters),
        skip_non_finite_(config.onNonFiniteLoss == NonFiniteAction::kSkip),
        stop_on_non_finite_(config.onNonFiniteLoss == NonFiniteAction::kStop),
        global_workers_(global_workers),
        collective_(collective) {}

  bool is_sync_point(const WorkerRound& w) const override {
    if (w.round + 1 == w.plan->rounds()) return true;
    if (listener_window_.active()) return listener_window_.is_sync_point(w.iteration);
    return (w.round + 1) % frequency_ == 0;
  }
  std::int64_t rounds_between_sync_points(std::int64_t rounds) const override {
    const std::int64_t window = listener_window_.active() ? listener_window_.longest() : frequency_;
    return std::min<std::int64_t>(window, rounds);
  }
  double gradient_divisor(const WorkerRound& w) const override { return w.samples; }
  void on_empty_batch(Replica&) const override {}

  // Each worker decides for its own replica, without waiting for its loss unless a decision
  // needs it: skipping a non-finite loss (onNonFiniteLoss: skip) reads it now; stopping on one
  // waits for the sync point (before_meeting). With dynamic loss scaling, a non-finite gradient
  // with a finite loss is an overflow (skip the step, shrink the scale), with a non-finite loss a
  // divergence.
  void update(Replica& r, const WorkerRound& w) override {
    if (w.samples == 0) return;
    // A finite loss can still give a non-finite gradient (3e27 overflowing in the backward
    // pass): applied, it made every parameter NaN.
    if (skip_non_finite_ && (!std::isfinite(r.read(w.loss)) ||
                             (!r.scaler->dynamic() &&
                              !r.backend->all_finite(r.parameter_count(), r.model->gradients())))) {
      r.scaler->on_non_finite_skip();
      return;
    }
    if (!r.scaler->dynamic() || r.backend->all_finite(r.parameter_count(), r.model->gradients())) {
      r.apply_step(w.iteration, w.lr_multiplier);
    } else if (std::isfinite(r.read(w.loss))) {
      r.on_overflow(w.epoch, w.iteration);
    } else {
      throw non_finite_error(w.epoch, w.iteration, "training loss");
    }
  }

  void before_meeting(Replica& r, const WorkerRound& w, std::int64_t window_first_round) override {
    check_losses(r, w, window_first_round);
    average(r, w, window_first_round);
  }

 private:
  // A step is applied without looking at its loss (so it need not wait for it); a non-finite
  // one stops the run here, before the replicas are averaged or saved, naming the round where
  // it first went bad.
  void check_losses(const Replica& r, const WorkerRound& w, std::int64_t window_first_round) const {
    if (!stop_on_non_finite_) return;
    const auto losses = r.host_losses.begin();
    const auto end = losses + (w.round - window_first_round + 1);
    const auto bad = std::find_if(losses, end, [](float loss) { return !std::isfinite(loss); });
    if (bad == end) return;
    throw non_finite_error(w.epoch, w.iteration - (end - bad) + 1, "training loss");
  }

  // Parameters (and updater state) weighted by the samples this worker saw since the last
  // average, then summed over the workers.
  void average(Replica& r, const WorkerRound& w, std::int64_t window_first_round) {
    if (global_workers_ == 1) return;
    std::int64_t total = 0;
    std::int64_t mine = 0;
    for (std::int64_t q = window_first_round; q <= w.round; ++q) {
      total += w.plan->samples_in_round(q);
      mine += static_cast<std::int64_t>(w.plan->batch(q, w.global_worker).count);
    }
    const float weight = total > 0 ? static_cast<float>(static_cast<double>(mine) / total)
                                   : 1.0f / static_cast<float>(global_workers_);
    const std::size_t n = r.parameter_count();
    r.backend->scale(n, weight, r.model->parameters());
    collective_.all_reduce_sum(w.worker, r.model->parameters(), n);
    Optimizer& optimizer = *r.optimizer;
    if (average_updaters_ && optimizer.state_floats() > 0) {
      r.backend->scale(optimizer.state_floats(), weight, optimizer.state());
      collective_.all_reduce_sum(w.worker, optimizer.state(), optimizer.state_floats());
    }
  }

  std::int64_t frequency_;
  ListenerWindow listener_window_;
  bool average_updaters_;
  bool skip_non_finite_;
  bool stop_on_non_finite_;
  int global_workers_;
  Collective& collective_;
};

}  // namespace

std::unique_ptr<StepStrategy> make_step_strategy(const Config& config, Collective& collective,
                                                 int global_workers) {
  if (config.parallel.mode == ParallelMode::kSynchronous)
    return std::make_unique<SynchronousStep>(config, collective);
  return std::make_unique<AveragingStep>(config, collective, global_workers);
}

}  // namespace dl
