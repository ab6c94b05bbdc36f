// evaluation.txt: the test set's last Evaluation.stats(), with the confusion matrix;
// evaluation.json: the same evaluation as JSON (per-class figures, the whole confusion matrix) for
// the report. After each epoch, or with a validation set once, by the final model, at the end.
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "io/run_files.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

// evaluation.json is a document of its own, so it starts with "format_version" as every JSON
// document of the run directory does; the keys after it are eval --json's "evaluation" object.
std::string evaluation_document(const Evaluation& evaluation) {
  Json document = versioned_json_object();
  Json fields;
  DL_CHECK(parse_json(evaluation.to_json(), fields), "the evaluation's JSON reads back");
  document.update(fields);
  return json_document(document);
}

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
    write_file_atomically(json_path_, evaluation_document(test.evaluation));
  }

  std::string path_, json_path_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_evaluation_txt(const ListenerContext& context) {
  return std::make_unique<EvaluationTxt>(context);
}

}  // namespace dl
