#include "cli/console_writer.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <streambuf>
#include <thread>

#include "core/thread_start.hpp"
#include "io/posix_write.hpp"

namespace dl {

namespace {

// Text waiting for a reader beyond this is dropped rather than held: a console nobody reads
// must not grow the run's memory without bound.
constexpr std::size_t kMaxPendingBytes = std::size_t{8} << 20;

}  // namespace

// Collects the text of each line (flushing at newlines) and hands it to the writer thread.
class ConsoleWriter::Buffer final : public std::streambuf {
 public:
  Buffer(int fd, std::atomic<int>* stop_signal, std::chrono::milliseconds flush_wait)
      : fd_(fd), stop_signal_(stop_signal), flush_wait_(flush_wait) {
    start_thread(fd == STDERR_FILENO ? "the thread that writes standard error"
                                     : "the thread that writes standard output",
                 [this] { write_loop(); })
        .detach();
  }

  bool finish(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    hand_over_locked();
    return wait_written_locked(lock, timeout);
  }

  std::string failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

  bool reader_gone() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_errno_ == EPIPE;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    std::lock_guard<std::mutex> lock(mutex_);
    line_.push_back(traits_type::to_char_type(c));
    if (c == '\n') hand_over_locked();
    return c;
  }

  std::streamsize xsputn(const char* text, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    line_.append(text, static_cast<std::size_t>(n));
    if (std::memchr(text, '\n', static_cast<std::size_t>(n)) != nullptr) hand_over_locked();
    return n;
  }

  int sync() override {
    std::unique_lock<std::mutex> lock(mutex_);
    hand_over_locked();
    if (flush_wait_.count() > 0 && !stalled_ && !wait_written_locked(lock, flush_wait_))
      stalled_ = failure_.empty();
    return 0;
  }

 private:
  bool wait_written_locked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    written_.wait_until(lock, deadline, [this] { return pending_.empty() && !writing_; });
    return pending_.empty() && !writing_ && failure_.empty();
  }

  void hand_over_locked() {
    if (line_.empty()) return;
    if (failure_.empty() && pending_.size() + line_.size() <= kMaxPendingBytes) {
      pending_ += line_;
      ready_.notify_one();
    }
    line_.clear();
  }

  void write_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      ready_.wait(lock, [this] { return !pending_.empty(); });
      std::string text;
      text.swap(pending_);
      writing_ = true;
      lock.unlock();
      const int err = write_all(fd_, text.data(), text.size());
      lock.lock();
      writing_ = false;
      if (err != 0) fail_locked(err);
      stalled_ = false;  // the reader took the text: flushes wait for it again
      written_.notify_all();
    }
  }

  void fail_locked(int err) {
    if (failure_.empty()) {
      failure_ = std::strerror(err);
      failure_errno_ = err;
    }
    pending_.clear();
    int none = 0;
    if (stop_signal_ != nullptr) stop_signal_->compare_exchange_strong(none, SIGPIPE);
  }

  const int fd_;
  std::atomic<int>* stop_signal_;
  const std::chrono::milliseconds flush_wait_;
  bool stalled_ = false;  // a flush's wait ran out and no write has completed since
  mutable std::mutex mutex_;
  std::condition_variable ready_, written_;
  std::string line_;     // the line being written by the run
  std::string pending_;  // complete lines the writer thread has not written yet
  bool writing_ = false;
  std::string failure_;
  int failure_errno_ = 0;  // the first failed write's errno
};

ConsoleWriter::ConsoleWriter(int fd, std::atomic<int>* stop_signal,
                             std::chrono::milliseconds flush_wait)
    : buffer_(new Buffer(fd, stop_signal, flush_wait)), stream_(buffer_) {}

ConsoleWriter& ConsoleWriter::start(int fd, std::atomic<int>* stop_signal,
                                    std::chrono::milliseconds flush_wait) {
  // Never destroyed: the writer thread may still be blocked in write() when main returns.
  return *new ConsoleWriter(fd, stop_signal, flush_wait);
}

bool ConsoleWriter::finish(std::chrono::milliseconds timeout) {
  stream_.flush();
  return buffer_->finish(timeout);
}

std::string ConsoleWriter::failure() const {
  return buffer_->failure();
}

bool ConsoleWriter::reader_gone() const {
  return buffer_->reader_gone();
}

}  // namespace dl
