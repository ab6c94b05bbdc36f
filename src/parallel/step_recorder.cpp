#include "parallel/step_recorder.hpp"

#include <cstring>
#include <exception>
#include <iostream>

#include <fmt/format.h>

namespace dl {

RecordedStepKey recorded_step_key(int samples, float grad_scale) {
  RecordedStepKey key;
  key.samples = samples;
  static_assert(sizeof(key.grad_scale_bits) == sizeof(grad_scale), "a float is 32 bits");
  std::memcpy(&key.grad_scale_bits, &grad_scale, sizeof(grad_scale));
  return key;
}

StepRecorder::StepRecorder(Backend& backend, bool wanted) : backend_(backend), enabled_(wanted) {}

void StepRecorder::run(const RecordedStepKey& key, const std::function<void()>& part) {
  RecordedWork* work = enabled_ ? find(key) : nullptr;
  // The first run of a key is not recorded: it is where libraries set themselves up lazily
  // (allocating workspaces, loading kernels), which a recording must not contain.
  if (work == nullptr && enabled_ && last_unrecorded_ == key) work = record(key, part);
  if (work == nullptr) {
    part();
    last_unrecorded_ = key;
    return;
  }
  work->replay();
  ++replays_;
}

RecordedWork* StepRecorder::find(const RecordedStepKey& key) {
  for (Recording& r : recordings_)
    if (r.key == key) return r.work.get();
  return nullptr;
}

RecordedWork* StepRecorder::record(const RecordedStepKey& key, const std::function<void()>& part) {
  if (!backend_.begin_recording()) {
    enabled_ = false;
    return nullptr;
  }
  std::unique_ptr<RecordedWork> work;
  try {
    part();
  } catch (const std::exception& e) {
    (void)backend_.end_recording();
    give_up(e.what());
    return nullptr;
  }
  work = backend_.end_recording();
  if (work == nullptr) {
    give_up("the backend could not record the step");
    return nullptr;
  }
  if (recordings_.size() == kMaxRecordings) recordings_.erase(recordings_.begin());
  recordings_.push_back(Recording{key, std::move(work)});
  return recordings_.back().work.get();
}

void StepRecorder::give_up(const std::string& why) {
  enabled_ = false;
  recordings_.clear();
  // Through std::cerr, whose buffer is the CLI's stderr writer: C stdio's stderr would bypass
  // it and could interleave with, or outlive, the lines it orders.
  std::cerr << fmt::format(
      "dl-train: warning: {}: recording the training step failed ({}); every step now runs op "
      "by op (slower, same results); set cuda.graphs: false to skip the attempt\n",
      backend_.name(), why);
}

}  // namespace dl
