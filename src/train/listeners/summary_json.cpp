// summary.json: the outcome of the run (accuracy, final score, throughput, training seconds, peak
// memory, why it stopped), written last, through the one JSON writer.
#include <nlohmann/json.hpp>

#include "config/enum_names.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class SummaryJson final : public TrainingListener {
 public:
  explicit SummaryJson(const ListenerContext& context)
      : workers_(context.config.parallel.workers), path_(context.run.file("summary.json")) {}

  void on_finish(RunEnd& end) override {
    const TrainOutcome& outcome = end.outcome;
    Json summary = versioned_json_object();
    summary["test_accuracy"] = outcome.test_accuracy;
    summary["final_score"] = outcome.final_score;
    summary["epochs"] = outcome.epochs_completed;
    summary["iterations"] = outcome.iterations;
    summary["train_seconds"] = outcome.train_seconds;
    summary["train_images_per_second"] = outcome.images_per_second;
    summary["peak_rss_bytes"] = end.peak_rss_bytes;
    summary["workers"] = workers_;
    summary["stopped_by"] = end.stopped_by;
    if (end.early_stopping) summary["early_stopping"] = end.early_stopping->to_json();
    if (end.loss_scaling) {
      Json scaling = Json::object();
      scaling["mode"] = enum_name(end.loss_scaling->mode);
      scaling["final_scale"] = end.loss_scaling->final_scales.front();
      scaling["skipped_steps"] = end.loss_scaling->skipped_steps;
      summary["loss_scaling"] = std::move(scaling);
    }
    write_file_atomically(path_, json_document(summary));
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
