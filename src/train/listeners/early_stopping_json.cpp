// Early stopping (train/early_stopping.hpp) as a listener: it judges every sync point's score and
// every evaluated epoch, stops the run, writes best_model.dlm at each new best (saveBestModel)
// and early_stopping.json when the run ends; its state travels in checkpoints.
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "io/run_files.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

constexpr const char* kStateKey = "early_stopping_state";

class EarlyStoppingJson final : public TrainingListener {
 public:
  explicit EarlyStoppingJson(const ListenerContext& context)
      : config_(context.config.earlyStopping),
        stopping_(context.config.earlyStopping, context.config.epochs),
        state_(context.state),
        best_model_path_(context.run.file(run_files::kBestModel)),
        json_path_(context.run.file(run_files::kEarlyStopping)) {}

  void on_checkpoint_restore(const CheckpointState& state, const std::string& path) override {
    const auto it = state.metadata.find(kStateKey);
    if (it == state.metadata.end()) return;
    // The state's reader knows the text, not the file: a damaged state named no checkpoint.
    try {
      stopping_.restore_state(it->second);
    } catch (const CheckpointError& e) {
      throw CheckpointError(path + ": " + e.what());
    }
  }
  std::string ended_by() const override {
    if (!stopping_.terminated()) return {};
    const EarlyStoppingResult result = stopping_.result();
    return fmt::format("early stopping: stopped by {}: {}", enum_name(result.reason),
                       result.details);
  }
  void on_checkpoint_save(CheckpointState& state) override {
    state.metadata[kStateKey] = stopping_.save_state();
  }

  // A stop signal ends the run anyway: its score is not judged.
  void on_sync_point(SyncEvent& event) override {
    if (event.stop_signal != 0) return;
    if (stopping_.on_iteration(event.point.iteration, event.aggregated_score(), event.run_seconds))
      event.stop = true;
  }

  void on_epoch_end(EpochEnd& event) override {
    if (!stopping_.should_evaluate(event.epoch)) {
      stopping_.on_epoch_end(event.epoch);
    } else {
      const double score = score_of(event.monitored());
      if (stopping_.on_epoch_end(event.epoch, score) && config_.saveBestModel) {
        state_.save_model(best_model_path_, RunPosition{event.epoch + 1, 0, event.iteration});
        event.new_best = EpochEnd::BestModel{score, best_model_path_};
      }
    }
    if (stopping_.terminated()) event.stop = true;
  }

  void on_finish(RunEnd& end) override {
    end.early_stopping = stopping_.result();
    Json json = versioned_json_object();
    json.update(end.early_stopping->to_json());
    write_file_atomically(json_path_, json_document(json));
  }

 private:
  double score_of(const EvaluationResult& result) const {
    switch (config_.scoreCalculator) {
      case ScoreCalculator::kAccuracy:
        return result.evaluation.accuracy();
      case ScoreCalculator::kF1:
        return result.evaluation.f1();
      case ScoreCalculator::kTestLoss:
        break;
    }
    return result.mean_loss;
  }

  const EarlyStoppingConfig& config_;
  EarlyStopping stopping_;
  TrainingState& state_;
  std::string best_model_path_;
  std::string json_path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_early_stopping_json(const ListenerContext& context) {
  if (!context.config.earlyStopping.enabled) return nullptr;
  return std::make_unique<EarlyStoppingJson>(context);
}

}  // namespace dl
