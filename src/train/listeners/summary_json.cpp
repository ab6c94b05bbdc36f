// summary.json: the outcome of the run (accuracy, final score, throughput, training seconds, peak
// memory, why it stopped), written last.
#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "io/atomic_file.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class SummaryJson final : public TrainingListener {
 public:
  explicit SummaryJson(const ListenerContext& context)
      : workers_(context.config.parallel.workers), path_(context.run.file("summary.json")) {}

  void on_finish(RunEnd& end) override {
    const TrainOutcome& outcome = end.outcome;
    std::string json = fmt::format(
        "{{\n  \"test_accuracy\": {:.6f},\n  \"final_score\": {:.9g},\n  \"epochs\": {},\n"
        "  \"iterations\": {},\n  \"train_seconds\": {:.3f},\n  \"train_images_per_second\": "
        "{:.1f},\n"
        "  \"peak_rss_bytes\": {},\n  \"workers\": {},\n  \"stopped_by\": \"{}\"",
        outcome.test_accuracy, outcome.final_score, outcome.epochs_completed, outcome.iterations,
        outcome.train_seconds, outcome.images_per_second, end.peak_rss_bytes, workers_,
        end.stopped_by);
    if (end.early_stopping) json += ",\n  \"early_stopping\": " + end.early_stopping->to_json();
    if (end.loss_scaling) {
      json += fmt::format(
          ",\n  \"loss_scaling\": {{\"mode\": \"{}\", \"final_scale\": {}, \"skipped_steps\": {}}}",
          enum_name(end.loss_scaling->mode), end.loss_scaling->final_scales.front(),
          end.loss_scaling->skipped_steps);
    }
    json += "\n}\n";
    write_file_atomically(path_, json);
  }

 private:
  int workers_;
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_summary_json(const ListenerContext& context) {
  return std::make_unique<SummaryJson>(context);
}

}  // namespace dl
