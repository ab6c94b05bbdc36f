// The console (standard output of rank 0), in the mode output.console picks (console_text.hpp):
// what the run set up, progress (a bar redrawn in place, or a line per score report), one line
// per epoch with the evaluation, and what the run did at its end. Last of the listeners, so it
// also reports what the others did (checkpoints on request, a new best model, early stopping).
// Warnings go to standard error. Every line is flushed as it is written: a log file a person
// follows with `tail -f` shows each line at once, not when a buffer fills.
#include <chrono>
#include <ctime>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/enum_names.hpp"
#include "core/epoch_number.hpp"
#include "core/figure_text.hpp"
#include "io/json_writer.hpp"
#include "report/metric_names.hpp"
#include "train/listeners/console_text.hpp"
#include "train/listeners/listeners.hpp"
#include "train/listeners/progress_bar.hpp"

namespace dl {

namespace {

std::string clock_time() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  return fmt::format("{:02}:{:02}:{:02}", local.tm_hour, local.tm_min, local.tm_sec);
}

class ConsoleLog final : public TrainingListener {
 public:
  ConsoleLog(const ListenerContext& context, ConsoleMode mode)
      : config_(context.config), out_(context.console), mode_(mode) {}

  void on_start(const RunInfo& info) override {
    max_epochs_ = info.max_epochs;
    start_ = info.start;
    next_epoch_start_ = std::chrono::steady_clock::now();
    // Warnings go to standard error in every mode, quiet included: a person must see them.
    for (const std::string& line : info.resume_log)
      if (is_warning(line)) std::cerr << "dl-train: " << line << std::endl;
    if (mode_ == ConsoleMode::kQuiet) return;
    if (mode_ == ConsoleMode::kJsonl) return record(start_record(info));
    print_setup(out_, info, config_);
    out_.flush();
  }

  void on_sync_point(SyncEvent& event) override {
    const SyncPoint& p = event.point;
    if (mode_ == ConsoleMode::kBar) draw_bar(event);
    if (event.report && mode_ == ConsoleMode::kLines) {
      line(fmt::format("{} epoch {} iteration {} ({}/{}): score {:.6f}, lr {:.6g}, {:.0f} images/s",
                       clock_time(), epoch_number(p.epoch), p.iteration, p.round + 1, p.rounds,
                       figure(event.score), p.learning_rate, event.images_per_second));
    }
    if (event.report && mode_ == ConsoleMode::kJsonl) record(score_record(event));
    for (const SavedCheckpoint& saved : event.saved) {
      if (saved.reason == SaveReason::kRequested)
        message("checkpoint requested (SIGUSR1): " + saved.path);
      if (saved.reason == SaveReason::kStopSignal)
        message(fmt::format("signal {} received{}: checkpoint {}", event.stop_signal,
                            event.stop_signal_rank != 0
                                ? fmt::format(" by rank {}", event.stop_signal_rank)
                                : std::string(),
                            saved.path));
    }
  }

  void on_epoch_end(EpochEnd& event) override {
    last_stats_ = event.monitored().evaluation.stats();
    if (mode_ == ConsoleMode::kJsonl) {
      record(epoch_record(event));
    } else if (mode_ != ConsoleMode::kQuiet) {
      close_bar();
      line(epoch_line(event));
    }
    next_epoch_start_ = std::chrono::steady_clock::now();
    if (event.new_best) {
      message(fmt::format("early stopping: new best score {:.6f} at epoch {}; saved {}",
                          figure(event.new_best->score), epoch_number(event.epoch),
                          event.new_best->path));
    }
  }

  void on_finish(RunEnd& end) override {
    if (mode_ == ConsoleMode::kQuiet) return;
    if (mode_ == ConsoleMode::kJsonl) return record(finish_record(end));
    close_bar();
    if (end.test != nullptr) last_stats_ = end.test->evaluation.stats();
    if (config_.output.printEvaluation && !last_stats_.empty()) out_ << last_stats_ << "\n";
    print_finish(out_, end);
    out_.flush();
  }

 private:
  // The bar of the current epoch: a header line "Epoch 3/10" (the third of ten, whose index in
  // files is 2: core/epoch_number.hpp), then one line redrawn with a carriage return, at most ten
  // times a second, always at the epoch's last round.
  void draw_bar(const SyncEvent& event) {
    const SyncPoint& p = event.point;
    using Clock = std::chrono::steady_clock;
    const auto now = Clock::now();
    if (p.epoch != bar_epoch_) {
      close_bar();
      bar_epoch_ = p.epoch;
      bar_start_ = next_epoch_start_;
      // Rounds this process trains in the epoch start at 0, or where a resumed run goes on.
      bar_first_round_ = p.epoch == start_.epoch ? start_.round : 0;
      bar_samples_ = 0;
      out_ << fmt::format("Epoch {}/{}\n", epoch_number(p.epoch), max_epochs_);
    }
    bar_samples_ += p.samples_since_previous;
    const bool last = p.round + 1 >= p.rounds;
    if (!last && bar_open_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    ProgressLine progress;
    progress.done = p.round + 1;
    progress.total = p.rounds;
    progress.seconds = std::chrono::duration<double>(now - bar_start_).count();
    const std::int64_t rounds_here = p.round + 1 - bar_first_round_;
    if (rounds_here > 0 && progress.seconds > 0) {
      progress.eta_seconds = progress.seconds / static_cast<double>(rounds_here) *
                             static_cast<double>(p.rounds - p.round - 1);
      progress.images_per_second = static_cast<double>(bar_samples_) / progress.seconds;
    }
    // The loss the epoch line will print, so the bar's last value and the line agree.
    progress.loss = event.compute_epoch_train_loss ? event.compute_epoch_train_loss() : 0.0;
    // \r goes back to the line's start, ESC[K clears what a longer earlier line left.
    out_ << "\r" << format_progress_line(progress) << "\x1b[K" << std::flush;
    bar_open_ = true;
  }

  void close_bar() {
    if (!bar_open_) return;
    out_ << "\n";
    bar_open_ = false;
  }

  // Keras's four numbers: the training loss and accuracy over the epoch, then the validation
  // set's (or, without one, the test set's) accuracy, F1 and loss.
  std::string epoch_line(const EpochEnd& event) const {
    std::string text = fmt::format(
        "epoch {}/{} done in {:.2f}s ({:.0f} images/s); train loss {:.4f} - accuracy {:.4f}",
        epoch_number(event.epoch), max_epochs_, event.epoch_seconds, event.images_per_second,
        figure(event.train_loss), figure(event.train_accuracy));
    if (event.validation != nullptr) {
      text += fmt::format(" - {0}loss {1:.4f} - {0}accuracy {2:.4f}", kValidationMetricPrefix,
                          figure(event.validation->mean_loss),
                          figure(event.validation->evaluation.accuracy()));
    } else {
      const Evaluation& test = event.test->evaluation;
      text += fmt::format("; test accuracy {:.4f}, F1 {:.4f}, loss {:.4f}", figure(test.accuracy()),
                          figure(test.f1()), figure(event.test->mean_loss));
    }
    return mode_ == ConsoleMode::kBar ? text : clock_time() + " " + text;
  }

  // A line of its own; on a terminal it ends the bar first so the bar is redrawn below it.
  void message(const std::string& text) {
    if (mode_ == ConsoleMode::kQuiet) return;
    if (mode_ == ConsoleMode::kJsonl) {
      Json m = versioned_json_object();
      m["event"] = "message";
      m["text"] = text;
      return record(m);
    }
    close_bar();
    line(text);
  }

  void line(const std::string& text) { out_ << text << std::endl; }
  void record(const Json& value) { out_ << json_line(value) << std::endl; }

  const Config& config_;
  std::ostream& out_;
  ConsoleMode mode_;
  int max_epochs_ = 0;
  RunPosition start_;
  std::string last_stats_;
  int bar_epoch_ = -1;
  bool bar_open_ = false;
  std::int64_t bar_first_round_ = 0, bar_samples_ = 0;
  // The bar's clock starts when the previous epoch's reports are done, so its first round counts.
  std::chrono::steady_clock::time_point next_epoch_start_, bar_start_, last_draw_;
};

}  // namespace

ConsoleMode resolve_console_mode(ConsoleMode configured, bool terminal) {
  if (configured != ConsoleMode::kAuto) return configured;
  return terminal ? ConsoleMode::kBar : ConsoleMode::kLines;
}

std::unique_ptr<TrainingListener> make_console_log(const ListenerContext& context) {
  return std::make_unique<ConsoleLog>(
      context, resolve_console_mode(context.config.output.console, context.console_is_terminal));
}

}  // namespace dl
