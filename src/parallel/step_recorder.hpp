// The training step's fixed-shape part (forward, loss, backward) recorded by the backend after its
// first run and replayed from then on: on a GPU one graph launch instead of dozens of kernel
// launches, which is what bounds a small network's step. The part depends only on the batch size
// and the gradient scale once a model is bound (its buffers never move, and a model with dropout
// is never recorded), so those two are the key of a recording. The batches themselves arrive in
// the model's input buffer before the part runs, and its results leave in fixed places, so the
// round-dependent work (gathering the batch, filing the loss) stays outside the recording.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"

namespace dl {

struct RecordedStepKey {
  int samples = 0;
  std::uint32_t grad_scale_bits = 0;  // the float's bits: scales equal as floats are one key
  bool operator==(const RecordedStepKey& other) const {
    return samples == other.samples && grad_scale_bits == other.grad_scale_bits;
  }
};

RecordedStepKey recorded_step_key(int samples, float grad_scale);

class StepRecorder {
 public:
  // Records nothing unless `wanted` and the backend can record.
  StepRecorder(Backend& backend, bool wanted);

  // Runs `part` (which issues the ops of one step's part for `key`): the first time a key is seen
  // as it is, the second time recorded and replayed, after that replayed. A recording that fails
  // turns recording off for the rest of the run, with one line on stderr, and the part runs as is.
  void run(const RecordedStepKey& key, const std::function<void()>& part);

  bool recording() const { return enabled_; }
  std::int64_t replays() const { return replays_; }

 private:
  // The most recordings kept: a full batch, an epoch's short last batch, and a loss scale that
  // changed (the older ones are dropped first).
  static constexpr std::size_t kMaxRecordings = 4;

  struct Recording {
    RecordedStepKey key;
    std::unique_ptr<RecordedWork> work;
  };
  RecordedWork* find(const RecordedStepKey& key);
  RecordedWork* record(const RecordedStepKey& key, const std::function<void()>& part);
  void give_up(const std::string& why);

  Backend& backend_;
  bool enabled_;
  std::optional<RecordedStepKey> last_unrecorded_;  // the last part run as is (its warm-up)
  std::vector<Recording> recordings_;
  std::int64_t replays_ = 0;
};

}  // namespace dl
