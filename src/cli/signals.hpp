// Signal handling for batch jobs: SIGTERM, SIGINT and SIGHUP (a closed terminal, a dropped ssh
// session) ask the trainer to finish the current step, write a checkpoint and exit (143 / 130 /
// 129; under nohup SIGHUP stays ignored); a second SIGINT exits at once; SIGUSR1 asks for a
// checkpoint and training goes on. The handlers only set atomics: all the work happens on the
// training threads at the next sync point. The handlers run on a thread of their own, never on a
// training thread (signals.cpp says why).
#pragma once

#include <atomic>

namespace dl {

struct SignalState {
  std::atomic<int> stop_signal{0};
  std::atomic<bool> checkpoint_request{false};
};

// Installs the handlers and blocks the signals in the calling thread and the threads it starts
// later, leaving them to a thread of their own; call it before starting any training thread. The
// returned state lives for the whole process.
SignalState& install_signal_handlers();

// First thing in main(): descriptors 0-2 that are closed are opened on /dev/null, so that no file
// opened later becomes "standard output"; SIGPIPE is ignored, so that writing to a closed pipe
// fails with EPIPE (handled by whoever writes) instead of killing the process; SIGUSR1 is ignored
// until training installs its handler.
void prepare_standard_streams();

}  // namespace dl
