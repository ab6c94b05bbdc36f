// Starting a thread, which the system may refuse: the limit on one user's processes and threads
// (RLIMIT_NPROC, `ulimit -u`), a cgroup's pids.max, the kernel's threads-max, or memory for the
// thread's stack. A refusal is a ThreadStartError (exit 7, like memory running out): one line
// naming what the thread was for, the limits in force and the keys that set how many threads
// dl-train starts, instead of an internal error saying "Resource temporarily unavailable".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace dl {

// The limits a thread start can run into, where they are set (none: unlimited or unknown).
struct ThreadLimits {
  std::optional<std::uint64_t> user_processes;  // RLIMIT_NPROC's soft limit: `ulimit -u`
  std::optional<std::uint64_t> cgroup_pids;     // the cgroup's pids.max
  // RLIMIT_AS's soft limit (`ulimit -v`), in bytes: each thread's stack is reserved from it, so
  // under a tight one a thread start fails with the same EAGAIN as under a process limit.
  std::optional<std::uint64_t> address_space_bytes;
};

// This process's limits.
ThreadLimits current_thread_limits();

// "could not start <what>: <reason>; <the limits>; lower ... or raise ulimit -u" (and ulimit -v
// where the address space is limited).
std::string thread_start_message(const std::string& what, const std::string& reason,
                                 const ThreadLimits& limits);

class ThreadStartError : public Error {
 public:
  // `what` names the thread ("worker 2's thread"); `cause` is what std::thread threw.
  ThreadStartError(const std::string& what, const std::system_error& cause);
};

// std::thread(body), throwing ThreadStartError when the thread cannot be started.
template <class Body>
std::thread start_thread(const std::string& what, Body&& body) {
  try {
    return std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    throw ThreadStartError(what, e);
  }
}

// Starts `count` threads that only wait, named by what(i) as the threads they stand for, then lets
// them end and joins them: a start the system refuses throws ThreadStartError here. A run calls it
// before it claims its run directory, for the threads it will start once training begins, so
// that such a refusal, like running out of memory, leaves nothing behind (README: "a start that
// fails before that leaves nothing behind").
void check_threads_start(int count, const std::function<std::string(int)>& what);

}  // namespace dl
