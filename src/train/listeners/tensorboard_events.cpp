// tensorboard/events.out.tfevents.*: with output.tensorboard, TensorBoard scalars at every score
// report (train/loss, train/learning_rate, train/images_per_second) and every epoch's end
// (epoch/test_accuracy, epoch/test_f1, epoch/test_loss, epoch/images_per_second, and the
// validation set's when there is one), all at the global iteration as the step, so the two
// groups share one x axis. A resumed run starts a new file, beginning with a session start at
// its first step, so TensorBoard drops what a killed run wrote after its last checkpoint.
#include "report/metric_names.hpp"
#include "report/tensorboard_writer.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class TensorBoardEvents final : public TrainingListener {
 public:
  explicit TensorBoardEvents(const ListenerContext& context)
      : writer_(context.run.file(RunDirectory::kTensorBoardName)) {}

  void on_start(const RunInfo& info) override {
    writer_.write_session_start(info.start.iteration + 1);
  }

  void on_sync_point(SyncEvent& event) override {
    if (!event.report) return;
    writer_.write_scalars(event.point.iteration,
                          {{"train/loss", event.score},
                           {"train/learning_rate", event.point.learning_rate},
                           {"train/images_per_second", event.images_per_second}});
  }

  void on_epoch_end(EpochEnd& event) override {
    std::vector<Scalar> values{{"epoch/epoch", static_cast<double>(event.epoch)},
                               {"epoch/train_loss", event.train_loss},
                               {"epoch/train_accuracy", event.train_accuracy},
                               {"epoch/images_per_second", event.images_per_second}};
    if (event.test != nullptr) {
      values.push_back(
          {"epoch/" + kTestMetricPrefix + "accuracy", event.test->evaluation.accuracy()});
      values.push_back({"epoch/" + kTestMetricPrefix + "f1", event.test->evaluation.f1()});
      values.push_back({"epoch/" + kTestMetricPrefix + "loss", event.test->mean_loss});
    }
    if (event.validation != nullptr) {
      values.push_back({"epoch/" + kValidationMetricPrefix + "accuracy",
                        event.validation->evaluation.accuracy()});
      values.push_back({"epoch/" + kValidationMetricPrefix + "loss", event.validation->mean_loss});
    }
    writer_.write_scalars(event.iteration, values);
  }

  void on_checkpoint_save(CheckpointState&) override { writer_.sync(); }

 private:
  TensorBoardWriter writer_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_tensorboard_events(const ListenerContext& context) {
  if (!context.config.output.tensorboard) return nullptr;
  return std::make_unique<TensorBoardEvents>(context);
}

}  // namespace dl
