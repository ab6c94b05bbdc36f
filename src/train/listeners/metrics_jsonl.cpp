// metrics.jsonl: one JSON object per evaluated epoch (test accuracy, precision, recall, F1 and
// loss, the epoch's seconds and images per second).
#include <charconv>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "io/append_file.hpp"
#include "io/atomic_file.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class MetricsJsonl final : public TrainingListener {
 public:
  explicit MetricsJsonl(const ListenerContext& context)
      : path_(context.run.file("metrics.jsonl")) {}

  // Keeps the lines of epochs before the checkpoint's: a run killed after evaluating an epoch
  // but before its epoch-end checkpoint evaluates that epoch again on resume, and must not log
  // it twice.
  void on_checkpoint_restore(const CheckpointState& state, const std::string&) override {
    constexpr std::string_view kEpochKey = "{\"epoch\":";
    std::ifstream in(path_);
    if (!in) return;
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.compare(0, kEpochKey.size(), kEpochKey) != 0) continue;
      std::int64_t line_epoch = 0;
      const char* number = line.data() + kEpochKey.size();
      const auto parsed = std::from_chars(number, line.data() + line.size(), line_epoch);
      // A line cut short by a failed write (no closing brace) is dropped with the others.
      if (parsed.ec == std::errc() && line.back() == '}' && line_epoch < state.epoch) {
        kept += line + "\n";
      }
    }
    write_file_atomically(path_, kept);
  }

  void on_epoch_end(EpochEnd& event) override {
    const Evaluation& ev = event.test->evaluation;
    AppendFile metrics(path_);
    metrics.append_line(fmt::format(
        "{{\"epoch\":{},\"iteration\":{},\"test_accuracy\":{:.6f},\"test_precision\":{:.6f},"
        "\"test_recall\":{:.6f},\"test_f1\":{:.6f},\"test_loss\":{:.6f},\"epoch_seconds\":{:.3f},"
        "\"train_images_per_second\":{:.1f}}}",
        event.epoch, event.iteration, ev.accuracy(), ev.precision(), ev.recall(), ev.f1(),
        event.test->mean_loss, event.epoch_seconds, event.images_per_second));
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_metrics_jsonl(const ListenerContext& context) {
  return std::make_unique<MetricsJsonl>(context);
}

}  // namespace dl
