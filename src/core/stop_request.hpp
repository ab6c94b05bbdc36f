// A stop signal that comes while a run reads its data (SIGTERM from Slurm or Kubernetes while a
// folder of many images is decoded): the data readers' loops look for it between files or rows
// (parallel_for.hpp) and end early with StopRequested, which training answers as a stop before
// training (nothing written, exit 128 + the signal), instead of finishing a read of minutes past
// a scheduler's grace period. Only while a StopRequestScope watches a flag (train's set-up):
// elsewhere (eval, predict, validate, the training loop's own reads) nothing stops a read.
#pragma once

#include <atomic>
#include <stdexcept>

namespace dl {

class StopRequested : public std::runtime_error {
 public:
  explicit StopRequested(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

// Watches `stop_signal` (the signal handlers' flag: a signal number, 0 for none; null watches
// nothing) for as long as it lives; one at a time, on the thread that reads the data.
class StopRequestScope {
 public:
  explicit StopRequestScope(const std::atomic<int>* stop_signal);
  ~StopRequestScope();
  StopRequestScope(const StopRequestScope&) = delete;
  StopRequestScope& operator=(const StopRequestScope&) = delete;
};

// The watched flag's signal, or 0 (none, or no scope); any thread may ask.
int stop_requested();
// Throws StopRequested when stop_requested() is not 0.
void throw_if_stop_requested();

}  // namespace dl
