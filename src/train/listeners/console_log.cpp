// The console (standard output of rank 0): what the run set up, a line per score report, one per
// epoch with the evaluation, and what the run did at its end. Last of the listeners, so it also
// reports what the others did (checkpoints on request, a new best model, early stopping).
#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class ConsoleLog final : public TrainingListener {
 public:
  explicit ConsoleLog(const ListenerContext& context)
      : config_(context.config), out_(context.console) {}

  void on_start(const RunInfo& info) override {
    if (info.processes > 1)
      out_ << fmt::format("processes: {}; global workers: {}\n", info.process_group,
                          info.global_workers);
    out_ << fmt::format("data: {} training and {} test examples ({}), {} classes\n",
                        info.train_examples, info.test_examples, info.sample_shape,
                        config_.data.numClasses);
    out_ << info.blas << "\n" << info.threads << "\n";
    out_ << "backend: " << info.backend << "\n";
    if (!info.placement.empty()) out_ << "placement: " << info.placement << "\n";
    out_ << "collective: " << info.collective << "\n"
         << info.optimizer << "\n"
         << info.data_placement << "\n";
    print_model(info);
    for (const std::string& line : info.resume_log) out_ << line << "\n";
  }

  void on_sync_point(SyncEvent& event) override {
    const SyncPoint& p = event.point;
    if (event.report) {
      out_ << fmt::format(
          "epoch {} iteration {} ({}/{}): score {:.6f}, lr {:.6g}, {:.0f} images/s\n", p.epoch,
          p.iteration, p.round + 1, p.rounds, event.score, p.learning_rate,
          event.images_per_second);
    }
    for (const SavedCheckpoint& saved : event.saved) {
      if (saved.reason == SaveReason::kRequested)
        out_ << "checkpoint requested (SIGUSR1): " << saved.path << "\n";
      if (saved.reason == SaveReason::kStopSignal)
        out_ << fmt::format("signal {} received: checkpoint {}\n", event.stop_signal, saved.path);
    }
  }

  void on_epoch_end(EpochEnd& event) override {
    out_ << fmt::format("epoch {} done in {:.2f}s ({:.0f} images/s); test accuracy {:.4f}\n",
                        event.epoch, event.epoch_seconds, event.images_per_second,
                        event.test->evaluation.accuracy());
    if (config_.output.printEvaluation) out_ << event.test->evaluation.stats() << "\n";
    if (event.new_best) {
      out_ << fmt::format("early stopping: new best score {:.6f} at epoch {}; saved {}\n",
                          event.new_best->score, event.epoch, event.new_best->path);
    }
  }

  void on_finish(RunEnd& end) override {
    for (std::size_t w = 0; w < end.memory_reports.size(); ++w) {
      if (!end.memory_reports[w].empty())
        out_ << fmt::format("memory, worker {}:\n{}\n", w, end.memory_reports[w]);
    }
    if (end.early_stopping) out_ << end.early_stopping->summary() << "\n";
    if (end.loss_scaling) print_loss_scaling(*end.loss_scaling);
    const TrainOutcome& o = end.outcome;
    out_ << fmt::format(
        "done: {} epoch(s), {} iterations, {:.1f}s, {:.0f} images/s; run directory {}\n",
        o.epochs_completed, o.iterations, o.train_seconds, o.images_per_second, o.run_directory);
  }

 private:
  void print_model(const RunInfo& info) {
    const ParallelConfig& parallel = config_.parallel;
    const bool averaging = parallel.mode == ParallelMode::kAveraging;
    out_ << fmt::format(
        "model: {} parameters; {} mode, {} worker(s) x batch {}{}\n", info.parameters,
        averaging ? "averaging" : "synchronous", parallel.workers, config_.batchSize,
        averaging && parallel.workers > 1
            ? fmt::format(", averaging every {} round(s)", parallel.averagingFrequency)
            : std::string());
    if (info.loss_scaling == LossScalingMode::kNone) return;
    const LossScalingConfig& s = config_.lossScaling;
    out_ << fmt::format("loss scaling: {}, initial scale {}{}\n", enum_name(info.loss_scaling),
                        info.initial_loss_scale,
                        info.loss_scaling == LossScalingMode::kDynamic
                            ? fmt::format(" (x{} after {} good steps, x{} on overflow)",
                                          s.growthFactor, s.growthInterval, s.backoffFactor)
                            : std::string());
  }

  void print_loss_scaling(const RunEnd::LossScaling& scaling) {
    std::string scales;
    for (std::size_t w = 0; w < scaling.final_scales.size(); ++w)
      scales += fmt::format("{}{}", w == 0 ? "" : ", ", scaling.final_scales[w]);
    out_ << fmt::format("loss scaling ({}): final scale {}{}; {} step(s) skipped for overflow\n",
                        enum_name(scaling.mode), scales,
                        scaling.final_scales.size() > 1 ? " (per worker)" : "",
                        scaling.skipped_steps);
  }

  const Config& config_;
  std::ostream& out_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_console_log(const ListenerContext& context) {
  return std::make_unique<ConsoleLog>(context);
}

}  // namespace dl
