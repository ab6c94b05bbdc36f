// model.dlm: the final model, written when the run ends other than by a stop signal.
#include "io/run_files.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class ModelDlm final : public TrainingListener {
 public:
  explicit ModelDlm(const ListenerContext& context)
      : state_(context.state), path_(context.run.file(run_files::kModel)) {}

  void on_finish(RunEnd& end) override {
    // A diverged model holds non-finite parameters: nothing to keep.
    if (end.stop_signal != 0 || end.diverged) return;
    state_.save_model(path_, RunPosition{end.next_epoch, 0, end.outcome.iterations});
  }

 private:
  TrainingState& state_;
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_model_dlm(const ListenerContext& context) {
  return std::make_unique<ModelDlm>(context);
}

}  // namespace dl
