#include "train/trainer.hpp"

#include <sys/resource.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "config/enum_names.hpp"
#include "data/data_sources.hpp"
#include "data/dataset.hpp"
#include "io/append_file.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_directory.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/node_share.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/thread_budget.hpp"
#include "train/early_stopping.hpp"
#include "train/evaluator.hpp"
#include "train/run_directory.hpp"

namespace dl {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kScoresHeader = "epoch,iteration,worker,score,learning_rate";
constexpr const char* kTimingHeader = "epoch,iteration,images_per_second,elapsed_seconds";
constexpr const char* kEarlyStoppingStateKey = "early_stopping_state";
constexpr const char* kTrainSecondsKey = "train_seconds";
constexpr const char* kSamplesKey = "samples_trained";
// Followed by the local worker's index: "loss_scaler.0", "loss_scaler.1", ...
constexpr const char* kLossScalerKeyPrefix = "loss_scaler.";
constexpr int kSignalInterrupt = 2;  // SIGINT; the CLI maps signals to exit codes the same way

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  constexpr std::int64_t kBytesPerKilobyte = 1024;
  return static_cast<std::int64_t>(usage.ru_maxrss) * kBytesPerKilobyte;
}

// Keeps the lines of a CSV log whose iteration (second column) is at most `iteration`: a resumed
// run rewrites the rows that followed its checkpoint, so the log reads as one uninterrupted run.
void truncate_log_after(const std::string& path, std::int64_t iteration) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      kept += line + "\n";
      header = false;
      continue;
    }
    const auto first = line.find(',');
    const auto second = line.find(',', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    // A damaged row (a crash in the middle of writing it) has no valid iteration: drop it.
    const std::string field = line.substr(first + 1, second - first - 1);
    char* end = nullptr;
    const long long row_iteration = std::strtoll(field.c_str(), &end, 10);
    if (!field.empty() && *end == '\0' && row_iteration <= iteration) kept += line + "\n";
  }
  write_file_atomically(path, kept);
}

// Keeps the lines of the metrics log (one JSON object per evaluated epoch) for epochs before
// `epoch`: a run killed after evaluating an epoch but before its epoch-end checkpoint evaluates
// that epoch again on resume, and must not log it twice.
void truncate_metrics_from_epoch(const std::string& path, std::int64_t epoch) {
  constexpr std::string_view kEpochKey = "{\"epoch\":";
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.compare(0, kEpochKey.size(), kEpochKey) != 0) continue;
    std::int64_t line_epoch = 0;
    const char* number = line.data() + kEpochKey.size();
    const auto parsed = std::from_chars(number, line.data() + line.size(), line_epoch);
    // A line cut short by a failed write (no closing brace) is dropped with the others.
    if (parsed.ec == std::errc() && line.back() == '}' && line_epoch < epoch) {
      kept += line + "\n";
    }
  }
  write_file_atomically(path, kept);
}

// Rank 0 prepares the run directory (refusing, resuming or replacing a run) before any other
// rank looks at it.
RunDirectory open_run_directory(const Config& config, const TrainOptions& options,
                                ProcessGroup& processes) {
  const RunDirectory::Existing existing = options.resume      ? RunDirectory::Existing::kResume
                                          : options.overwrite ? RunDirectory::Existing::kOverwrite
                                                              : RunDirectory::Existing::kRefuse;
  if (processes.is_root()) {
    RunDirectory directory(config.output.directory, existing);
    // A writer killed mid-write leaves "<file>.tmp-<pid>"; only this rank writes here, so only
    // it can tell a dead writer from a live one on another node.
    directory.remove_stale_temporary_files();
    processes.barrier();
    return directory;
  }
  processes.barrier();
  return RunDirectory(config.output.directory, RunDirectory::Existing::kResume);
}

class FitLoop {
 public:
  FitLoop(const Config& config, const TrainOptions& options)
      : config_(config),
        options_(options),
        own_processes_(options.processes == nullptr ? make_single_process_group() : nullptr),
        processes_(options.processes != nullptr ? *options.processes : *own_processes_),
        root_(processes_.is_root()),
        log_(!root_                   ? silent_
             : options.log != nullptr ? *options.log
                                      : std::cout),
        run_(open_run_directory(config, options, processes_)),
        checkpoints_(run_.checkpoints(), config.output.keepLast) {}

  TrainOutcome run();

 private:
  void load_data();
  void build_trainer();
  void restore_or_initialize();
  SyncAction on_sync_point(const SyncPoint& point);
  void report_scores(const SyncPoint& point);
  double aggregated_score(const SyncPoint& point);
  void end_epoch(int epoch, double epoch_seconds, std::int64_t epoch_samples);
  CheckpointState capture_state(const std::string& kind, std::int64_t epoch, std::int64_t round,
                                std::int64_t iteration);
  std::string save_checkpoint(std::int64_t epoch, std::int64_t round, std::int64_t iteration);
  void write_summary(const TrainOutcome& outcome, const std::string& stopped_by);
  void restore_loss_scalers(const std::string& path, const CheckpointState& state);
  std::string loss_scaling_report() const;
  std::string loss_scaling_json() const;

  void check_same_config_on_every_rank();

  const Config& config_;
  const TrainOptions& options_;
  std::unique_ptr<ProcessGroup> own_processes_;
  ProcessGroup& processes_;
  const bool root_;               // rank 0: the one process that writes outputs and logs
  std::ostream silent_{nullptr};  // the log of the other ranks: discards everything
  std::ostream& log_;
  RunDirectory run_;
  CheckpointDirectory checkpoints_;
  std::unique_ptr<Dataset> train_, test_;
  std::unique_ptr<ParallelTrainer> trainer_;
  std::optional<EarlyStopping> early_stopping_;
  std::unique_ptr<AppendFile> scores_, timing_;

  int start_epoch_ = 0;
  std::int64_t start_round_ = 0;
  std::int64_t iteration_ = 0;
  std::int64_t last_report_iteration_ = 0;
  std::int64_t last_checkpoint_iteration_ = 0;
  std::int64_t samples_since_report_ = 0;
  std::int64_t samples_trained_ = 0;     // over the whole run, across resumes
  double train_seconds_before_ = 0.0;    // training time of the runs this one resumes
  double train_seconds_this_run_ = 0.0;  // time spent in rounds, without evaluation and saving
  Clock::time_point train_start_, last_report_time_;
  double last_score_ = 0.0;
  double last_accuracy_ = 0.0;
  int stop_signal_seen_ = 0;
};

void FitLoop::load_data() {
  const DataConfig& d = config_.data;
  train_ = std::make_unique<Dataset>(load_training_set(d));
  test_ = std::make_unique<Dataset>(load_test_set(d));
  const std::size_t expected = static_cast<std::size_t>(config_.inputType.height) *
                               config_.inputType.width * config_.inputType.channels;
  const std::size_t expected_input = config_.inputType.kind == InputTypeConfig::Kind::kFeedForward
                                         ? static_cast<std::size_t>(config_.inputType.size)
                                         : expected;
  if (train_->sample_floats() != expected_input) {
    throw DataError(fmt::format(
        "{}: images are {} ({} values) but inputType expects {} values; fix inputType in {}",
        training_source(d), train_->shape_text(), train_->sample_floats(), expected_input,
        config_.sourcePath));
  }
  if (test_->sample_floats() != train_->sample_floats()) {
    throw DataError(fmt::format("{}: test images are {} but training images are {}", test_source(d),
                                test_->shape_text(), train_->shape_text()));
  }
  log_ << fmt::format("data: {} training and {} test examples ({}), {} classes\n", train_->size(),
                      test_->size(), train_->shape_text(), d.numClasses);
}

void FitLoop::build_trainer() {
  log_ << configure_blas_for_this_cpu() << "\n";
  const ThreadBudget budget = plan_threads(config_.parallel, processes_);
  set_blas_threads(budget.threads_per_worker);
  log_ << budget.describe() << "\n";
  const int workers = config_.parallel.workers;
  const BackendChoice backend = choose_backend(config_);
  if (root_ && !backend.why_not_gpu.empty()) {
    std::cerr << "dl-train: backend: auto trains on the CPU: " << backend.why_not_gpu << "\n";
  }
  const BackendKind kind = backend.kind;
  const NodeShare gpus = share_of_visible_gpus(processes_);
  const GpuNeighbours neighbours{gpus.count, gpus.index};
  trainer_ = std::make_unique<ParallelTrainer>(
      config_, *train_,
      [this, kind, neighbours](int w) { return make_backend(kind, config_, w, neighbours); },
      [this, kind](const std::vector<Backend*>& backends) {
        return make_collective(kind, config_, backends, processes_);
      },
      processes_);
  log_ << "backend: " << trainer_->model(0).backend().name() << "\n";
  const std::string placement = describe_worker_placement(kind, config_, neighbours);
  if (!placement.empty()) log_ << "placement: " << placement << "\n";
  log_ << "collective: " << trainer_->collective().name() << "\n";
  log_ << trainer_->optimizer(0).describe() << "\n";
  log_ << trainer_->data_placement() << "\n";
  log_ << fmt::format(
      "model: {} parameters; {} mode, {} worker(s) x batch {}{}\n",
      trainer_->model(0).parameter_count(),
      config_.parallel.mode == ParallelMode::kSynchronous ? "synchronous" : "averaging", workers,
      config_.batchSize,
      config_.parallel.mode == ParallelMode::kAveraging && workers > 1
          ? fmt::format(", averaging every {} round(s)", config_.parallel.averagingFrequency)
          : std::string());
  const LossScaler& scaler = trainer_->loss_scaler(0);
  if (scaler.enabled()) {
    const LossScalingConfig& s = config_.lossScaling;
    log_ << fmt::format(
        "loss scaling: {}, initial scale {}{}\n", enum_name(scaler.mode()), scaler.scale(),
        scaler.dynamic() ? fmt::format(" (x{} after {} good steps, x{} on overflow)",
                                       s.growthFactor, s.growthInterval, s.backoffFactor)
                         : std::string());
  }
}

void FitLoop::restore_or_initialize() {
  if (config_.earlyStopping.enabled) early_stopping_.emplace(config_.earlyStopping, config_.epochs);
  std::optional<std::pair<std::string, CheckpointState>> found;
  if (options_.resume) {
    std::vector<std::string> warnings;
    found = checkpoints_.load_newest_valid(&warnings);
    for (const std::string& w : warnings) log_ << "warning: " << w << "\n";
    if (!found)
      log_ << "resume: no valid checkpoint in " << run_.checkpoints() << "; starting fresh\n";
  }
  if (!found) {
    trainer_->initialize(config_.seed);
    if (!root_) return;
    scores_ = std::make_unique<AppendFile>(run_.file("scores.csv"), AppendFile::Mode::kTruncate);
    timing_ = std::make_unique<AppendFile>(run_.file("timing.csv"), AppendFile::Mode::kTruncate);
    scores_->append_line(kScoresHeader);
    timing_->append_line(kTimingHeader);
    return;
  }
  const std::string& path = found->first;
  const CheckpointState& state = found->second;
  Model& model = trainer_->model(0);
  if (state.network_signature != model.signature() ||
      state.parameters.size() != model.parameter_count()) {
    throw CheckpointError(fmt::format(
        "{}: saved from a different network ({}) than the config describes ({}); resume with the "
        "config the run was started with, or start a new run in another output.directory",
        path, state.network_signature, model.signature()));
  }
  if (state.config_hash != config_hash(config_)) {
    log_ << "resume: note: the config differs from the one the checkpoint was saved with\n";
  }
  model.upload_parameters(state.parameters.data());
  trainer_->replicate_parameters();
  for (int w = 0; w < trainer_->workers(); ++w) {
    Optimizer& opt = trainer_->optimizer(w);
    if (opt.state_floats() == 0) continue;
    if (state.updater_states.empty()) {
      throw CheckpointError(path + ": holds no updater state; it cannot resume this updater");
    }
    const std::vector<float>& s =
        state.updater_states[static_cast<std::size_t>(w) % state.updater_states.size()];
    if (s.size() != opt.state_floats()) {
      throw CheckpointError(fmt::format(
          "{}: updater state has {} values, the {} updater needs {}; resume with the updater the "
          "run was started with",
          path, s.size(), static_cast<int>(opt.type()), opt.state_floats()));
    }
    trainer_->model(w).backend().upload(opt.state(), s.data(), s.size() * sizeof(float));
  }
  start_epoch_ = static_cast<int>(state.epoch);
  start_round_ = state.round_in_epoch;
  iteration_ = state.iteration;
  last_report_iteration_ = iteration_;
  last_checkpoint_iteration_ = iteration_;
  auto meta = [&](const char* key) -> const std::string* {
    auto it = state.metadata.find(key);
    return it == state.metadata.end() ? nullptr : &it->second;
  };
  if (const std::string* s = meta(kTrainSecondsKey)) train_seconds_before_ = std::stod(*s);
  if (const std::string* s = meta(kSamplesKey)) samples_trained_ = std::stoll(*s);
  if (early_stopping_) {
    if (const std::string* s = meta(kEarlyStoppingStateKey)) early_stopping_->restore_state(*s);
  }
  restore_loss_scalers(path, state);
  if (!root_) return;
  truncate_log_after(run_.file("scores.csv"), iteration_);
  truncate_log_after(run_.file("timing.csv"), iteration_);
  truncate_metrics_from_epoch(run_.file("metrics.jsonl"), start_epoch_);
  scores_ = std::make_unique<AppendFile>(run_.file("scores.csv"));
  timing_ = std::make_unique<AppendFile>(run_.file("timing.csv"));
  log_ << fmt::format("resume: {} (epoch {}, round {}, iteration {})\n", path, start_epoch_,
                      start_round_, iteration_);
}

// Each worker's scaler from the checkpoint (worker w from the saved worker w modulo those saved,
// as for updater states). A checkpoint written without loss scaling leaves the initial scale.
void FitLoop::restore_loss_scalers(const std::string& path, const CheckpointState& state) {
  std::vector<const std::string*> saved;  // saved[w]: worker w's state, for w = 0, 1, ...
  while (true) {
    const auto it = state.metadata.find(kLossScalerKeyPrefix + std::to_string(saved.size()));
    if (it == state.metadata.end()) break;
    saved.push_back(&it->second);
  }
  if (saved.empty() || !trainer_->loss_scaler(0).dynamic()) return;
  for (int w = 0; w < trainer_->workers(); ++w) {
    try {
      trainer_->loss_scaler(w).restore_state(*saved[static_cast<std::size_t>(w) % saved.size()]);
    } catch (const CheckpointError& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
}

double FitLoop::aggregated_score(const SyncPoint& point) {
  double loss = 0.0;
  std::int64_t samples = 0;
  for (std::size_t w = 0; w < point.samples.size(); ++w) {
    loss += point.loss_sum[w];
    samples += point.samples[w];
  }
  Model& model = trainer_->model(0);
  return (samples > 0 ? loss / static_cast<double>(samples) : 0.0) +
         trainer_->optimizer(0).regularization_score(model.parameters());
}

void FitLoop::report_scores(const SyncPoint& point) {
  const bool aggregated = config_.parallel.reportScoreAfterAveraging || trainer_->workers() == 1;
  if (aggregated) {
    last_score_ = aggregated_score(point);
    scores_->append_line(fmt::format("{},{},all,{:.9g},{:.9g}", point.epoch, point.iteration,
                                     last_score_, point.learning_rate));
  } else {
    for (int w = 0; w < trainer_->workers(); ++w) {
      const std::int64_t n = point.samples[static_cast<std::size_t>(w)];
      if (n == 0) continue;
      const double score =
          point.loss_sum[static_cast<std::size_t>(w)] / static_cast<double>(n) +
          trainer_->optimizer(w).regularization_score(trainer_->model(w).parameters());
      scores_->append_line(fmt::format("{},{},{},{:.9g},{:.9g}", point.epoch, point.iteration, w,
                                       score, point.learning_rate));
      if (w == 0) last_score_ = score;
    }
  }
  const double elapsed = seconds_since(last_report_time_);
  const double images_per_second =
      elapsed > 0.0 ? static_cast<double>(samples_since_report_) / elapsed : 0.0;
  timing_->append_line(fmt::format("{},{},{:.1f},{:.3f}", point.epoch, point.iteration,
                                   images_per_second, seconds_since(train_start_)));
  log_ << fmt::format("epoch {} iteration {} ({}/{}): score {:.6f}, lr {:.6g}, {:.0f} images/s\n",
                      point.epoch, point.iteration, point.round + 1, point.rounds, last_score_,
                      point.learning_rate, images_per_second);
  last_report_time_ = Clock::now();
  samples_since_report_ = 0;
  last_report_iteration_ = point.iteration;
}

SyncAction FitLoop::on_sync_point(const SyncPoint& point) {
  // Counted at sync points only, so a resumed run's total matches an uninterrupted one.
  samples_since_report_ += point.samples_since_previous;
  samples_trained_ += point.samples_since_previous;
  const std::int64_t every = config_.output.scoreEveryIterations;
  if (point.iteration / every > last_report_iteration_ / every || point.end_of_epoch) {
    report_scores(point);
  }
  const std::int64_t checkpoint_every = config_.output.checkpointEveryIterations;
  const std::int64_t next_round = point.round + 1;
  if (checkpoint_every > 0 && !point.end_of_epoch &&
      point.iteration / checkpoint_every > last_checkpoint_iteration_ / checkpoint_every) {
    save_checkpoint(point.epoch, next_round, point.iteration);
  }
  if (options_.checkpoint_request != nullptr && options_.checkpoint_request->exchange(false)) {
    log_ << "checkpoint requested (SIGUSR1): "
         << save_checkpoint(point.epoch, next_round, point.iteration) << "\n";
  }
  if (options_.stop_signal != nullptr && options_.stop_signal->load() != 0) {
    stop_signal_seen_ = options_.stop_signal->load();
    log_ << fmt::format("signal {} received: checkpoint {}\n", stop_signal_seen_,
                        save_checkpoint(point.epoch, next_round, point.iteration));
    return SyncAction::kStop;
  }
  if (early_stopping_) {
    const double score = aggregated_score(point);
    if (early_stopping_->on_iteration(point.iteration, score,
                                      train_seconds_before_ + seconds_since(train_start_))) {
      return SyncAction::kStop;
    }
  }
  return SyncAction::kContinue;
}

CheckpointState FitLoop::capture_state(const std::string& kind, std::int64_t epoch,
                                       std::int64_t round, std::int64_t iteration) {
  CheckpointState state;
  state.kind = kind;
  state.config_hash = config_hash(config_);
  Model& model = trainer_->model(0);
  state.network_signature = model.signature();
  state.epoch = epoch;
  state.round_in_epoch = round;
  state.iteration = iteration;
  state.parameters.resize(model.parameter_count());
  model.download_parameters(state.parameters.data());
  if (kind == kCheckpointKind) {
    for (int w = 0; w < trainer_->workers(); ++w) {
      Optimizer& opt = trainer_->optimizer(w);
      std::vector<float> s(opt.state_floats());
      if (!s.empty())
        trainer_->model(w).backend().download(s.data(), opt.state(), s.size() * sizeof(float));
      state.updater_states.push_back(std::move(s));
      // Averaged updater states are identical: one copy is enough.
      if (config_.parallel.averageUpdaters || config_.parallel.mode == ParallelMode::kSynchronous)
        break;
    }
    if (early_stopping_) state.metadata[kEarlyStoppingStateKey] = early_stopping_->save_state();
    if (trainer_->loss_scaler(0).dynamic()) {
      for (int w = 0; w < trainer_->workers(); ++w) {
        state.metadata[kLossScalerKeyPrefix + std::to_string(w)] =
            trainer_->loss_scaler(w).save_state();
      }
    }
  }
  state.metadata[kTrainSecondsKey] =
      fmt::format("{:.6f}", train_seconds_before_ + seconds_since(train_start_));
  state.metadata[kSamplesKey] = std::to_string(samples_trained_);
  return state;
}

std::string FitLoop::save_checkpoint(std::int64_t epoch, std::int64_t round,
                                     std::int64_t iteration) {
  if (!root_) return std::string();
  // The logs are forced to disk first: a checkpoint never refers to score rows that a crash
  // could still lose.
  scores_->sync();
  timing_->sync();
  const std::string path =
      checkpoints_.save(capture_state(kCheckpointKind, epoch, round, iteration));
  last_checkpoint_iteration_ = iteration;
  return path;
}

void FitLoop::end_epoch(int epoch, double epoch_seconds, std::int64_t epoch_samples) {
  if (!root_) return;
  const bool score_for_early_stopping = early_stopping_ && early_stopping_->should_evaluate(epoch);
  EvaluationResult result = evaluate(trainer_->model(0), *test_);
  const Evaluation& ev = result.evaluation;
  last_accuracy_ = ev.accuracy();
  log_ << fmt::format(
      "epoch {} done in {:.2f}s ({:.0f} images/s); test accuracy {:.4f}\n", epoch, epoch_seconds,
      epoch_seconds > 0 ? static_cast<double>(epoch_samples) / epoch_seconds : 0.0, last_accuracy_);
  if (config_.output.printEvaluation) log_ << ev.stats() << "\n";
  write_file_atomically(run_.file("evaluation.txt"), ev.stats() + "\n");
  AppendFile metrics(run_.file("metrics.jsonl"));
  metrics.append_line(fmt::format(
      "{{\"epoch\":{},\"iteration\":{},\"test_accuracy\":{:.6f},\"test_precision\":{:.6f},"
      "\"test_recall\":{:.6f},\"test_f1\":{:.6f},\"test_loss\":{:.6f},\"epoch_seconds\":{:.3f},"
      "\"train_images_per_second\":{:.1f}}}",
      epoch, iteration_, ev.accuracy(), ev.precision(), ev.recall(), ev.f1(), result.mean_loss,
      epoch_seconds, epoch_seconds > 0 ? static_cast<double>(epoch_samples) / epoch_seconds : 0.0));
  if (early_stopping_ && !score_for_early_stopping) early_stopping_->on_epoch_end(epoch);
  if (score_for_early_stopping) {
    double score = result.mean_loss;
    if (config_.earlyStopping.scoreCalculator == ScoreCalculator::kAccuracy) score = ev.accuracy();
    if (config_.earlyStopping.scoreCalculator == ScoreCalculator::kF1) score = ev.f1();
    if (early_stopping_->on_epoch_end(epoch, score) && config_.earlyStopping.saveBestModel) {
      write_checkpoint(run_.file("best_model.dlm"),
                       capture_state(kModelKind, epoch + 1, 0, iteration_));
      log_ << fmt::format("early stopping: new best score {:.6f} at epoch {}; saved {}\n", score,
                          epoch, run_.file("best_model.dlm"));
    }
  }
  save_checkpoint(epoch + 1, 0, iteration_);
}

// The final loss scale and the steps skipped for overflow. Synchronous replicas share every
// decision, so one worker's count is the run's; averaging workers skip on their own, so theirs
// add up (replica-steps lost).
std::int64_t skipped_for_overflow(ParallelTrainer& trainer, const Config& config) {
  if (config.parallel.mode == ParallelMode::kSynchronous)
    return trainer.loss_scaler(0).skipped_steps();
  std::int64_t total = 0;
  for (int w = 0; w < trainer.workers(); ++w) total += trainer.loss_scaler(w).skipped_steps();
  return total;
}

std::string FitLoop::loss_scaling_report() const {
  const LossScaler& scaler = trainer_->loss_scaler(0);
  std::string scales;
  for (int w = 0; w < trainer_->workers(); ++w) {
    scales += fmt::format("{}{}", w == 0 ? "" : ", ", trainer_->loss_scaler(w).scale());
  }
  return fmt::format("loss scaling ({}): final scale {}{}; {} step(s) skipped for overflow",
                     enum_name(scaler.mode()), scales,
                     trainer_->workers() > 1 ? " (per worker)" : "",
                     skipped_for_overflow(*trainer_, config_));
}

std::string FitLoop::loss_scaling_json() const {
  const LossScaler& scaler = trainer_->loss_scaler(0);
  return fmt::format("{{\"mode\": \"{}\", \"final_scale\": {}, \"skipped_steps\": {}}}",
                     enum_name(scaler.mode()), scaler.scale(),
                     skipped_for_overflow(*trainer_, config_));
}

void FitLoop::write_summary(const TrainOutcome& outcome, const std::string& stopped_by) {
  std::string json = fmt::format(
      "{{\n  \"test_accuracy\": {:.6f},\n  \"final_score\": {:.9g},\n  \"epochs\": {},\n"
      "  \"iterations\": {},\n  \"train_seconds\": {:.3f},\n  \"train_images_per_second\": "
      "{:.1f},\n"
      "  \"peak_rss_bytes\": {},\n  \"workers\": {},\n  \"stopped_by\": \"{}\"",
      outcome.test_accuracy, outcome.final_score, outcome.epochs_completed, outcome.iterations,
      outcome.train_seconds, outcome.images_per_second, peak_rss_bytes(), config_.parallel.workers,
      stopped_by);
  if (early_stopping_) json += ",\n  \"early_stopping\": " + early_stopping_->result().to_json();
  if (trainer_->loss_scaler(0).enabled()) json += ",\n  \"loss_scaling\": " + loss_scaling_json();
  json += "\n}\n";
  write_file_atomically(run_.file("summary.json"), json);
}

void FitLoop::check_same_config_on_every_rank() {
  const std::vector<std::uint64_t> hashes = processes_.all_gather(config_hash(config_));
  for (std::size_t r = 1; r < hashes.size(); ++r) {
    if (hashes[r] != hashes[0]) {
      throw ConfigError(fmt::format(
          "rank {}: its resolved config differs from rank 0's (hash {:016x}, rank 0 {:016x}); "
          "start every rank with the same config file and the same --set overrides",
          r, hashes[r], hashes[0]));
    }
  }
}

TrainOutcome FitLoop::run() {
  check_same_config_on_every_rank();
  if (processes_.size() > 1) {
    log_ << fmt::format("processes: {}; global workers: {}\n", processes_.name(),
                        processes_.size() * config_.parallel.workers);
  }
  if (root_) write_file_atomically(run_.file("config.resolved.yaml"), dump_config_yaml(config_));
  load_data();
  build_trainer();
  restore_or_initialize();
  const int max_epochs = early_stopping_ ? early_stopping_->max_epochs() : config_.epochs;
  const std::int64_t rounds = trainer_->rounds_per_epoch();
  train_start_ = last_report_time_ = Clock::now();
  TrainOutcome outcome;
  outcome.run_directory = run_.path();
  std::string stopped_by = "completed";
  int epoch = start_epoch_;
  std::int64_t first_round = start_round_;
  for (; epoch < max_epochs; ++epoch, first_round = 0) {
    const auto epoch_start = Clock::now();
    const std::int64_t samples_before = samples_trained_;
    const std::int64_t next = trainer_->run_epoch(
        epoch, first_round, iteration_, [this](const SyncPoint& p) { return on_sync_point(p); });
    processes_.broadcast(&stop_signal_seen_, sizeof(stop_signal_seen_), 0);
    if (next < rounds || stop_signal_seen_ != 0) {
      train_seconds_this_run_ += seconds_since(epoch_start);
      stopped_by =
          stop_signal_seen_ != 0 ? fmt::format("signal {}", stop_signal_seen_) : "early stopping";
      if (stop_signal_seen_ == 0) save_checkpoint(epoch, next, iteration_);
      if (next >= rounds && stop_signal_seen_ == 0) outcome.epochs_completed = epoch + 1;
      break;
    }
    const double epoch_seconds = seconds_since(epoch_start);
    train_seconds_this_run_ += epoch_seconds;
    end_epoch(epoch, epoch_seconds, samples_trained_ - samples_before);
    outcome.epochs_completed = epoch + 1;
    int stop_now = early_stopping_ && early_stopping_->terminated() ? 1 : 0;
    processes_.broadcast(&stop_now, sizeof(stop_now), 0);
    if (stop_now != 0) {
      ++epoch;
      break;
    }
  }
  if (epoch >= max_epochs) outcome.epochs_completed = max_epochs;
  outcome.iterations = iteration_;
  outcome.test_accuracy = last_accuracy_;
  outcome.final_score = last_score_;
  // Training time only: evaluation and checkpoint writing between epochs are not counted.
  outcome.train_seconds = train_seconds_before_ + train_seconds_this_run_;
  outcome.images_per_second = outcome.train_seconds > 0
                                  ? static_cast<double>(samples_trained_) / outcome.train_seconds
                                  : 0.0;
  if (stop_signal_seen_ != 0) {
    outcome.exit_code =
        stop_signal_seen_ == kSignalInterrupt ? ExitCode::kInterrupted : ExitCode::kTerminated;
  }
  if (!root_) return outcome;
  for (int w = 0; w < trainer_->workers(); ++w) {
    const std::string report = trainer_->model(w).backend().memory_report();
    if (!report.empty()) log_ << fmt::format("memory, worker {}:\n{}\n", w, report);
  }
  if (stop_signal_seen_ == 0) {
    write_checkpoint(run_.file("model.dlm"), capture_state(kModelKind, epoch, 0, iteration_));
  }
  if (early_stopping_) {
    const EarlyStoppingResult result = early_stopping_->result();
    log_ << result.summary() << "\n";
    write_file_atomically(run_.file("early_stopping.json"), result.to_json() + "\n");
  }
  if (trainer_->loss_scaler(0).enabled()) log_ << loss_scaling_report() << "\n";
  write_summary(outcome, stopped_by);
  log_ << fmt::format(
      "done: {} epoch(s), {} iterations, {:.1f}s, {:.0f} images/s; run directory {}\n",
      outcome.epochs_completed, outcome.iterations, outcome.train_seconds,
      outcome.images_per_second, run_.path());
  return outcome;
}

}  // namespace

TrainOutcome train(const Config& config, const TrainOptions& options) {
  FitLoop loop(config, options);
  return loop.run();
}

}  // namespace dl
