// metrics.jsonl: one JSON record per epoch through the one JSON writer: the training loss and
// accuracy over the epoch, the validation set's (val_*) or, without one, the test set's (test_*)
// accuracy, precision, recall, F1 and loss, the epoch's seconds and images per second. With a
// validation set a last record (no "epoch", "final": true) holds the test set's numbers.
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/append_file.hpp"
#include "io/atomic_file.hpp"
#include "io/file_access.hpp"
#include "io/json_writer.hpp"
#include "io/run_files.hpp"
#include "report/metric_names.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

void add_evaluation(Json& record, const std::string& prefix, const EvaluationResult& result) {
  const Evaluation& ev = result.evaluation;
  record[prefix + "accuracy"] = ev.accuracy();
  record[prefix + "precision"] = ev.precision();
  record[prefix + "recall"] = ev.recall();
  record[prefix + "f1"] = ev.f1();
  record[prefix + "loss"] = result.mean_loss;
}

class MetricsJsonl final : public TrainingListener {
 public:
  explicit MetricsJsonl(const ListenerContext& context)
      : path_(context.run.file(run_files::kMetrics)) {}

  // Keeps the records of epochs before the checkpoint's: a run killed after evaluating an epoch
  // but before its epoch-end checkpoint evaluates that epoch again on resume, and must not log it
  // twice. A line cut short by a failed write is not JSON and goes with them.
  void on_checkpoint_restore(const CheckpointState& state, const std::string&) override {
    // Read as the run's own file: a FIFO in its place is refused (exit 6), not waited on.
    const std::optional<std::string> text =
        read_optional_text(path_, InputRole::kRunOutput, run_files::kMaxLogBytes);
    if (!text) return;
    std::istringstream in(*text);
    std::string line, kept;
    while (std::getline(in, line)) {
      Json record;
      if (!parse_json(line, record) || !record.is_object()) continue;
      const auto epoch = record.find("epoch");
      if (epoch != record.end() && epoch->is_number_integer() &&
          epoch->get<std::int64_t>() < state.epoch)
        kept += line + "\n";
    }
    // Written when training goes on (on_start): a resume of a run that has ended leaves the file
    // as it is, its test set's "final" record too (it was dropped). Unchanged, it is not written.
    if (kept != *text) kept_ = std::move(kept);
  }

  void on_start(const RunInfo&) override {
    if (kept_) write_file_atomically(path_, *kept_);
    kept_.reset();
  }

  void on_epoch_end(EpochEnd& event) override {
    Json record = versioned_json_object();
    record["epoch"] = event.epoch;
    record["iteration"] = event.iteration;
    record["train_loss"] = event.train_loss;
    record["train_accuracy"] = event.train_accuracy;
    if (event.validation != nullptr)
      add_evaluation(record, kValidationMetricPrefix, *event.validation);
    if (event.test != nullptr) add_evaluation(record, kTestMetricPrefix, *event.test);
    record["epoch_seconds"] = event.epoch_seconds;
    record["train_images_per_second"] = event.images_per_second;
    AppendFile(path_).append_line(json_line(record));
  }

  void on_finish(RunEnd& end) override {
    // Once per model: an end written again after a kill logs no second record of the figures
    // its last epoch's record holds (the uninterrupted run's file has none).
    if (end.test == nullptr || end.test_in_epoch_record) return;
    Json record = versioned_json_object();
    record["final"] = true;
    record["iteration"] = end.outcome.iterations;
    add_evaluation(record, kTestMetricPrefix, *end.test);
    AppendFile(path_).append_line(json_line(record));
  }

 private:
  std::string path_;
  std::optional<std::string> kept_;  // the records a resume keeps, until training goes on
};

}  // namespace

std::unique_ptr<TrainingListener> make_metrics_jsonl(const ListenerContext& context) {
  return std::make_unique<MetricsJsonl>(context);
}

}  // namespace dl
