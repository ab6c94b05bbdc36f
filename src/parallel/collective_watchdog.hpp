// Bounds the time a rank waits in one collective of several processes (parallel.timeout). MPI
// collectives have no timeout: a rank that is stopped, hangs on a file system or lost its link
// without MPI noticing leaves the others waiting for ever. The process group marks each of its
// calls (watch); a thread of its own sees a call that outlasts the timeout and runs `on_expired`,
// which in dl-train prints the call and ends the process, and with it the job (the launcher ends
// the other ranks of a rank that exits). The thread calls no MPI function: only one thread of a
// process may (MPI_THREAD_SERIALIZED), and that one is the one waiting.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dl {

class CollectiveWatchdog {
 public:
  // `call` is the name given to watch(); `waited` the timeout it outlasted.
  using Expired = std::function<void(const std::string& call, std::chrono::milliseconds waited)>;

  explicit CollectiveWatchdog(Expired on_expired) : on_expired_(std::move(on_expired)) {}
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // 0: calls may wait for ever (no thread runs).
  void set_timeout(std::chrono::milliseconds timeout);

  // Marks one call for the lifetime of the returned object.
  class Watch {
   public:
    Watch(Watch&& other) noexcept : watchdog_(other.watchdog_) { other.watchdog_ = nullptr; }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    Watch& operator=(Watch&&) = delete;
    ~Watch() {
      if (watchdog_ != nullptr) watchdog_->leave();
    }

   private:
    friend class CollectiveWatchdog;
    explicit Watch(CollectiveWatchdog* watchdog) : watchdog_(watchdog) {}
    CollectiveWatchdog* watchdog_;
  };
  Watch watch(const char* call);

 private:
  void leave();
  void run();

  Expired on_expired_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::chrono::milliseconds timeout_{0};
  const char* call_ = nullptr;  // the call in progress, if any
  std::chrono::steady_clock::time_point entered_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dl
