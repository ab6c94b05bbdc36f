// Signal handling for batch jobs: SIGTERM, SIGINT and SIGHUP (a closed terminal, a dropped ssh
// session) ask the trainer to finish the current step, write a checkpoint and exit (143 / 130 /
// 129; under nohup SIGHUP stays ignored, and SIGINT where the launcher ignored it: a job started
// in the background by a script); a second SIGINT exits at once; SIGUSR1 asks for a
// checkpoint and training goes on. The handlers only set atomics: all the work happens on the
// training threads at the next sync point. The handlers run on a thread of their own, never on a
// training thread (signals.cpp says why). Once the run has returned, the signals have their
// default effect again.
#pragma once

#include <signal.h>

#include <atomic>
#include <utility>
#include <vector>

namespace dl {

struct SignalState {
  std::atomic<int> stop_signal{0};
  std::atomic<bool> checkpoint_request{false};
};

// The handlers, installed for as long as this lives (one per process: the run's): the signals are
// blocked in the constructing thread and the threads it starts later, and left to a thread of
// their own; construct it before starting any training thread. When it ends (the run has
// returned, or thrown), the signals get back the dispositions the process had before (the
// default, unless its launcher had them ignored) and this thread its mask, so a process held up
// on its way out (MPI's finalize, static destructors, thread joins) is ended by SIGTERM.
class SignalHandlers {
 public:
  SignalHandlers();
  ~SignalHandlers();
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

  // What the handlers set; it lives for the whole process.
  SignalState& state();
  // A job of several processes: the line a second interrupt writes names this one's rank, as
  // every other message of the job does.
  void name_rank(int rank);

 private:
  void install(int signal_number, void (*handler)(int));
  void restore();

  std::vector<std::pair<int, struct sigaction>> saved_;  // installed: the disposition before
  sigset_t saved_mask_{};
};

// DL_TRAIN_TEST_EXIT_PAUSE_MS=N (tests only): once the run has returned, says so on standard
// error and pauses N ms before the process ends, standing in for a process held up there.
void pause_before_exit_for_tests();

// First thing in main(): descriptors 0-2 that are closed are opened on /dev/null, so that no file
// opened later becomes "standard output"; SIGPIPE is ignored, so that writing to a closed pipe
// fails with EPIPE (handled by whoever writes) instead of killing the process, to the end: the
// last messages may still meet a closed pipe. SIGUSR1 is ignored until training installs its
// handler.
void prepare_standard_streams();

}  // namespace dl
