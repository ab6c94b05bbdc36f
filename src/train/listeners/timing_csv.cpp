// timing.csv: epoch,iteration,images_per_second,elapsed_seconds at each score report (the
// throughput since the previous report, the seconds since training started in this process).
#include <fmt/format.h>

#include "train/listeners/csv_log.hpp"
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class TimingCsv final : public TrainingListener {
 public:
  explicit TimingCsv(const ListenerContext& context)
      : log_(context.run.file("timing.csv"), "epoch,iteration,images_per_second,elapsed_seconds") {}

  void on_checkpoint_restore(const CheckpointState& state, const std::string&) override {
    log_.cut_after(state.iteration);
  }
  void on_start(const RunInfo&) override { log_.open(); }
  void on_sync_point(SyncEvent& event) override {
    if (!event.report) return;
    log_.append(fmt::format("{},{},{:.1f},{:.3f}", event.point.epoch, event.point.iteration,
                            event.images_per_second, event.process_seconds));
  }
  void on_checkpoint_save(CheckpointState&) override { log_.sync(); }

 private:
  CsvLog log_;
};

}  // namespace

std::unique_ptr<TrainingListener> make_timing_csv(const ListenerContext& context) {
  return std::make_unique<TimingCsv>(context);
}

}  // namespace dl
