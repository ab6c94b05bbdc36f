// scores.csv: epoch,iteration,worker,score,learning_rate at each score report; identical for
// identical runs, also across a kill and --resume.
#include <fmt/format.h>

#include "core/figure_text.hpp"
#include "io/run_files.hpp"
#include "train/listeners/csv_log.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class ScoresCsv final : public CsvLog {
 public:
  explicit ScoresCsv(const ListenerContext& context)
      : CsvLog(context.run.file(run_files::kScores), "epoch,iteration,worker,score,learning_rate") {
  }

  void on_sync_point(SyncEvent& event) override {
    const SyncPoint& p = event.point;
    for (const ScoreRow& row : event.scores) {
      const std::string worker = row.worker < 0 ? "all" : std::to_string(row.worker);
      append(p.iteration, fmt::format("{},{},{},{:.9g},{:.9g}", p.epoch, p.iteration, worker,
                                      figure(row.score), p.learning_rate));
    }
  }
};

}  // namespace

std::unique_ptr<TrainingListener> make_scores_csv(const ListenerContext& context) {
  return std::make_unique<ScoresCsv>(context);
}

}  // namespace dl
