// Errors that reach the user. Each carries the process exit code the CLI returns, and a
// message written as "where: what is wrong; what to do", on one line whatever user text it
// quotes (message_text.hpp).
#pragma once

#include <stdexcept>
#include <string>

#include "core/message_text.hpp"

namespace dl {

enum class ExitCode : int {
  kOk = 0,
  kFailure = 1,          // internal error, a worker failed
  kConfigError = 2,      // the YAML or a --set override is wrong
  kDataError = 3,        // an input data file is missing, truncated or inconsistent
  kCheckpointError = 4,  // a checkpoint or model file is unreadable, corrupt or incompatible
  kDiverged = 5,         // the loss became NaN or infinite
  kIoError = 6,          // an output could not be written (disk full, permissions)
  kOutOfMemory = 7,      // an allocation failed, or a thread could not be started
                         // (thread_start.hpp); the message names the keys to lower
  kHangUp = 129,         // SIGHUP (128 + 1)
  kInterrupted = 130,    // SIGINT (128 + 2)
  kBrokenPipe = 141,     // standard output closed by its reader (128 + SIGPIPE's 13)
  kTerminated = 143,     // SIGTERM (128 + 15)
};

// The exit code of a run stopped by `signal_number` (SIGHUP, SIGINT, SIGPIPE, SIGTERM): 128 + it,
// as a shell reports a process killed by that signal.
inline ExitCode exit_code_for_signal(int signal_number) {
  return static_cast<ExitCode>(128 + signal_number);
}

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message)
      : std::runtime_error(one_line(message)), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(ExitCode::kConfigError, message) {}
};

class DataError : public Error {
 public:
  explicit DataError(const std::string& message) : Error(ExitCode::kDataError, message) {}
};

class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& message)
      : Error(ExitCode::kCheckpointError, message) {}
};

class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(ExitCode::kIoError, message) {}
};

class DivergenceError : public Error {
 public:
  explicit DivergenceError(const std::string& message) : Error(ExitCode::kDiverged, message) {}
};

// A broken internal precondition: a bug in dl-train, not a user error.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ExitCode::kFailure, message) {}
};

// Throws InternalError with the condition's text and location when `cond` is false. Used for
// preconditions between our own components; user input is checked with the typed errors above.
#define DL_CHECK(cond, msg)                                                              \
  do {                                                                                   \
    if (!(cond))                                                                         \
      throw ::dl::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                ": check failed: " #cond ": " + std::string(msg));       \
  } while (0)

}  // namespace dl
