#include "parallel/collective_watchdog.hpp"

namespace dl {

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CollectiveWatchdog::set_timeout(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    timeout_ = timeout;
  }
  changed_.notify_all();
  if (timeout.count() > 0 && !thread_.joinable()) thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::Watch CollectiveWatchdog::watch(const char* call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call_ = call;
    entered_ = std::chrono::steady_clock::now();
  }
  changed_.notify_all();
  return Watch(this);
}

void CollectiveWatchdog::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  call_ = nullptr;
}

void CollectiveWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (call_ == nullptr || timeout_.count() == 0) {
      changed_.wait(lock);
      continue;
    }
    const auto deadline = entered_ + timeout_;
    if (std::chrono::steady_clock::now() < deadline) {
      // Woken early by a call that ended or began: the loop looks again.
      changed_.wait_until(lock, deadline);
      continue;
    }
    const std::string call = call_;
    const std::chrono::milliseconds waited = timeout_;
    lock.unlock();
    on_expired_(call, waited);
    return;
  }
}

}  // namespace dl
