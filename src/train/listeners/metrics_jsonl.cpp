// metrics.jsonl: one JSON record per evaluated epoch (test accuracy, precision, recall, F1 and
// loss, the epoch's seconds and images per second), through the one JSON writer.
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/append_file.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class MetricsJsonl final : public TrainingListener {
 public:
  explicit MetricsJsonl(const ListenerContext& context)
      : path_(context.run.file("metrics.jsonl")) {}

  // Keeps the records of epochs before the checkpoint's: a run killed after evaluating an epoch
  // but before its epoch-end checkpoint evaluates that epoch again on resume, and must not log it
  // twice. A line cut short by a failed write is not JSON and goes with them.
  void on_checkpoint_restore(const CheckpointState& state, const std::string&) override {
    std::ifstream in(path_);
    if (!in) return;
    std::string line, kept;
    while (std::getline(in, line)) {
      Json record;
      if (!parse_json(line, record) || !record.is_object()) continue;
      const auto epoch = record.find("epoch");
      if (epoch != record.end() && epoch->is_number_integer() &&
          epoch->get<std::int64_t>() < state.epoch)
        kept += line + "\n";
    }
    write_file_atomically(path_, kept);
  }

  void on_epoch_end(EpochEnd& event) override {
    const Evaluation& ev = event.test->evaluation;
    Json record = versioned_json_object();
    record["epoch"] = event.epoch;
    record["iteration"] = event.iteration;
    record["test_accuracy"] = ev.accuracy();
    record["test_precision"] = ev.precision();
    record["test_recall"] = ev.recall();
    record["test_f1"] = ev.f1();
    record["test_loss"] = event.test->mean_loss;
    record["epoch_seconds"] = event.epoch_seconds;
    record["train_images_per_second"] = event.images_per_second;
    AppendFile(path_).append_line(json_line(record));
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_metrics_jsonl(const ListenerContext& context) {
  return std::make_unique<MetricsJsonl>(context);
}

}  // namespace dl
