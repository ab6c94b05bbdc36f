// evaluation.txt: the last epoch's Evaluation.stats(), with the confusion matrix.
#include "io/atomic_file.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class EvaluationTxt final : public TrainingListener {
 public:
  explicit EvaluationTxt(const ListenerContext& context)
      : path_(context.run.file("evaluation.txt")) {}

  void on_epoch_end(EpochEnd& event) override {
    write_file_atomically(path_, event.test->evaluation.stats() + "\n");
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_evaluation_txt(const ListenerContext& context) {
  return std::make_unique<EvaluationTxt>(context);
}

}  // namespace dl
