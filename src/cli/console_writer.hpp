// The console of a training run, written by its own thread: a reader that stops reading (a full
// pipe, a stopped terminal) blocks that thread only, never training, so a signal still produces
// its checkpoint and its exit. A write that fails (the reader closed the pipe: `| head`; a full
// disk) asks the run to stop as SIGPIPE would, with a checkpoint, and the text after it is
// dropped; the command then tells the two apart by its exit code (141 or 6).
// Standard error is written the same way for the whole process (main), with flushes that wait
// a bounded time for the text to be written: a message reaches its reader before the process
// exits or aborts the job, and a reader that has stopped delays the process by that bound once,
// not forever.
#pragma once

#include <atomic>
#include <chrono>
#include <ostream>
#include <string>

namespace dl {

class ConsoleWriter {
 public:
  // The writer for descriptor `fd`. A failed write stores SIGPIPE into `stop_signal` (when no
  // other signal is there; null: a failed write only drops the text). A flush waits up to
  // `flush_wait` for the text to be written (0: hands it to the writer thread and returns);
  // after one such wait runs out, flushes do not wait again until a write completes. The object
  // lives until the process ends: its thread may be blocked in write() when the run is over.
  static ConsoleWriter& start(int fd, std::atomic<int>* stop_signal,
                              std::chrono::milliseconds flush_wait = {});

  std::ostream& stream() { return stream_; }

  // Waits up to `timeout` for what was written so far to reach the descriptor; false when the
  // reader has not taken it by then (the rest is dropped) or a write failed.
  bool finish(std::chrono::milliseconds timeout);

  // Why writing failed (strerror), empty while it has not.
  std::string failure() const;

  // Whether writing failed because the reader closed its end (EPIPE: `| head`), as opposed to
  // the output itself failing (a full disk, a file size limit).
  bool reader_gone() const;

 private:
  class Buffer;
  ConsoleWriter(int fd, std::atomic<int>* stop_signal, std::chrono::milliseconds flush_wait);
  Buffer* buffer_;
  std::ostream stream_;
};

}  // namespace dl
