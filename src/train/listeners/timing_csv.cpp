// timing.csv: epoch,iteration,images_per_second,elapsed_seconds at each score report (the
// throughput since the previous report, the seconds since training started in this process).
#include <fmt/format.h>

#include "io/run_files.hpp"
#include "train/listeners/csv_log.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class TimingCsv final : public CsvLog {
 public:
  explicit TimingCsv(const ListenerContext& context)
      : CsvLog(context.run.file(run_files::kTiming),
               "epoch,iteration,images_per_second,elapsed_seconds") {}

  void on_sync_point(SyncEvent& event) override {
    if (!event.report) return;
    append(event.point.iteration,
           fmt::format("{},{},{:.1f},{:.3f}", event.point.epoch, event.point.iteration,
                       event.images_per_second, event.process_seconds));
  }
};

}  // namespace

std::unique_ptr<TrainingListener> make_timing_csv(const ListenerContext& context) {
  return std::make_unique<TimingCsv>(context);
}

}  // namespace dl
