// evaluation.txt: the last epoch's Evaluation.stats(), with the confusion matrix; evaluation.json:
// the same evaluation as JSON (per-class figures, the whole confusion matrix) for the report.
#include "io/atomic_file.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class EvaluationTxt final : public TrainingListener {
 public:
  explicit EvaluationTxt(const ListenerContext& context)
      : path_(context.run.file("evaluation.txt")),
        json_path_(context.run.file("evaluation.json")) {}

  void on_epoch_end(EpochEnd& event) override {
    write_file_atomically(path_, event.test->evaluation.stats() + "\n");
    write_file_atomically(json_path_, event.test->evaluation.to_json() + "\n");
  }

 private:
  std::string path_, json_path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_evaluation_txt(const ListenerContext& context) {
  return std::make_unique<EvaluationTxt>(context);
}

}  // namespace dl
