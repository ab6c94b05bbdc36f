// checkpoints/: a checkpoint at the end of every epoch, every output.checkpointEveryIterations,
// on SIGUSR1, before a stop signal ends the run, and when the run stops in the middle of an epoch
// (TrainingState writes them; CheckpointDirectory keeps the newest output.keepLast).
#include "train/listeners/listeners.hpp"

namespace dl {

namespace {

class Checkpoints final : public TrainingListener {
 public:
  explicit Checkpoints(const ListenerContext& context)
      : every_(context.config.output.checkpointEveryIterations), state_(context.state) {}

  void on_checkpoint_restore(const CheckpointState& state, const std::string&) override {
    last_iteration_ = state.iteration;
  }

  // One checkpoint for every reason this sync point has; the next round is where it resumes.
  void on_sync_point(SyncEvent& event) override {
    const SyncPoint& p = event.point;
    std::vector<SaveReason> reasons;
    if (every_ > 0 && !p.end_of_epoch && p.iteration / every_ > last_iteration_ / every_)
      reasons.push_back(SaveReason::kPeriodic);
    if (event.checkpoint_requested) reasons.push_back(SaveReason::kRequested);
    if (event.stop_signal != 0) reasons.push_back(SaveReason::kStopSignal);
    // The end of an epoch is saved after its evaluation (on_epoch_end).
    if (event.stop && event.stop_signal == 0 && !p.end_of_epoch)
      reasons.push_back(SaveReason::kStopped);
    if (reasons.empty()) return;
    const std::string path = save(RunPosition{p.epoch, p.round + 1, p.iteration});
    for (SaveReason reason : reasons) event.saved.push_back(SavedCheckpoint{path, reason});
  }

  void on_epoch_end(EpochEnd& event) override {
    const std::string path = save(RunPosition{event.epoch + 1, 0, event.iteration});
    event.saved.push_back(SavedCheckpoint{path, SaveReason::kEpochEnd});
  }

 private:
  std::string save(const RunPosition& next) {
    last_iteration_ = next.iteration;
    return state_.save_checkpoint(next);
  }

  std::int64_t every_;  // output.checkpointEveryIterations; 0: none between epoch ends
  TrainingState& state_;
  std::int64_t last_iteration_ = 0;  // of the last checkpoint (or the one resumed from)
};

}  // namespace

std::unique_ptr<TrainingListener> make_checkpoints(const ListenerContext& context) {
  return std::make_unique<Checkpoints>(context);
}

}  // namespace dl
