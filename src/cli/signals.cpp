#include "cli/signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/thread_start.hpp"

namespace dl {

namespace {

SignalState g_state;

// The second interrupt's line, written by the handler as it is (write(2) is all a handler may
// call): composed beforehand, with the rank where the job has several.
constexpr char kSecondInterruptText[] =
    "a second interrupt: stopped at once, without the checkpoint of the first; --resume "
    "continues from the last one written\n";
char g_second_interrupt_line[sizeof kSecondInterruptText + 32] = "";

void compose_second_interrupt_line(const char* who) {
  std::snprintf(g_second_interrupt_line, sizeof g_second_interrupt_line, "\ndl-train: %s%s", who,
                kSecondInterruptText);
}

void on_stop_signal(int signal_number) {
  // A second interrupt means "now": the user has seen the first one being honoured too slowly.
  if (signal_number == SIGINT && g_state.stop_signal.load() == SIGINT) {
    // A job's log must still say why the run ended here.
    [[maybe_unused]] const ssize_t written =
        ::write(STDERR_FILENO, g_second_interrupt_line, std::strlen(g_second_interrupt_line));
    _exit(static_cast<int>(ExitCode::kInterrupted));
  }
  g_state.stop_signal.store(signal_number);
}

void on_checkpoint_signal(int) {
  g_state.checkpoint_request.store(true);
}

}  // namespace

void SignalHandlers::install(int signal_number, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction before {};
  if (sigaction(signal_number, &action, &before) == 0) saved_.emplace_back(signal_number, before);
}

// The signals are blocked in the calling thread, and so in every thread it starts afterwards (the
// training threads, their thread pools, the libraries' threads), and left open in one thread of
// their own that only waits for them. A handler then never runs on a training thread in the
// middle of its arithmetic: a stop signal that landed inside oneDNN's JIT-compiled products once
// in a few dozen runs ended the run with a corrupted heap (glibc's abort in the next free) before
// its checkpoint. A thread started before this call (the standard error writer) may still take a
// signal; it computes nothing.
SignalHandlers::SignalHandlers() {
  compose_second_interrupt_line("");
  install(SIGTERM, on_stop_signal);
  // Started under nohup (SIGHUP ignored), the job asked to outlive its terminal; started in the
  // background by a script (`dl-train ... &`: SIGINT ignored), it asked not to be stopped by the
  // terminal's Ctrl-C, which goes to the script's foreground job. Both are left so, as POSIX
  // utilities do.
  for (const int s : {SIGINT, SIGHUP}) {
    struct sigaction before {};
    if (sigaction(s, nullptr, &before) == 0 && before.sa_handler != SIG_IGN)
      install(s, on_stop_signal);
  }
  install(SIGUSR1, on_checkpoint_signal);
  sigset_t handled;
  sigemptyset(&handled);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&handled, s);
  pthread_sigmask(SIG_BLOCK, &handled, &saved_mask_);
  try {
    start_thread("the thread that handles signals", [handled] {
      pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);
      for (;;) pause();  // returns after each handler; the handlers do the work
    }).detach();
  } catch (...) {
    restore();
    throw;
  }
}

// Past here nothing reads the atomics: a signal that only set one would be lost. What is left of
// the process (MPI's finalize, the libraries' static destructors and thread joins) can hang, and
// SIGTERM, the one way a scheduler or a person ends a job gently, must then end it rather than
// be swallowed. The signal thread stays, now taking the signals with their default action.
SignalHandlers::~SignalHandlers() {
  restore();
}

void SignalHandlers::restore() {
  for (const auto& [signal_number, before] : saved_) sigaction(signal_number, &before, nullptr);
  saved_.clear();
  pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
}

SignalState& SignalHandlers::state() {
  return g_state;
}

void SignalHandlers::name_rank(int rank) {
  const std::string who = "rank " + std::to_string(rank) + ": ";
  compose_second_interrupt_line(who.c_str());
}

void pause_before_exit_for_tests() {
  const char* pause = std::getenv("DL_TRAIN_TEST_EXIT_PAUSE_MS");
  if (pause == nullptr) return;
  const long milliseconds = std::strtol(pause, nullptr, 10);
  std::cerr << "dl-train: test: pausing " << milliseconds << " ms before exiting" << std::endl;
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

void prepare_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // The lowest free descriptor is `fd` itself, since the ones below it are open by now.
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  // SIGUSR1 asks training for a checkpoint (Slurm's --signal=USR1@60): until training installs
  // its handler (after MPI's start, the config, the data), and in the commands that do not
  // train, it has nothing to ask for and is ignored. Its default action ended the process with
  // 138, a job ended by what was meant to save it.
  ::signal(SIGUSR1, SIG_IGN);
}

}  // namespace dl
