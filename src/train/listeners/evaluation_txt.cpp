// evaluation.txt: the test set's last Evaluation.stats(), with the confusion matrix;
// evaluation.json: the same evaluation as JSON (per-class figures, the whole confusion matrix) for
// the report. After each epoch, or with a validation set once, by the final model, at the end.
#include "io/atomic_file.hpp"
#include "io/run_files.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class EvaluationTxt final : public TrainingListener {
 public:
  explicit EvaluationTxt(const ListenerContext& context)
      : path_(context.run.file(run_files::kEvaluationText)),
        json_path_(context.run.file(run_files::kEvaluationJson)) {}

  void on_epoch_end(EpochEnd& event) override {
    if (event.test != nullptr) write(*event.test);
  }

  void on_finish(RunEnd& end) override {
    if (end.test != nullptr) write(*end.test);
  }

 private:
  void write(const EvaluationResult& test) {
    write_file_atomically(path_, test.evaluation.stats() + "\n");
    write_file_atomically(json_path_, test.evaluation.to_json() + "\n");
  }

  std::string path_, json_path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_evaluation_txt(const ListenerContext& context) {
  return std::make_unique<EvaluationTxt>(context);
}

}  // namespace dl
