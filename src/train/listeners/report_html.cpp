// report.html (src/report/report_html.hpp), with output.report: rewritten from the run
// directory's files at every epoch end and when the run ends, after the listeners that write
// those files, so a browser reloading it follows the run. `dl-train report` writes the same page.
#include "report/report_html.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class ReportHtml final : public TrainingListener {
 public:
  explicit ReportHtml(const ListenerContext& context) : directory_(context.run.path()) {}

  void on_epoch_end(EpochEnd&) override { write_run_report(directory_); }
  void on_finish(RunEnd&) override { write_run_report(directory_); }

 private:
  std::string directory_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_report_html(const ListenerContext& context) {
  if (!context.config.output.report) return nullptr;
  return std::make_unique<ReportHtml>(context);
}

}  // namespace dl
