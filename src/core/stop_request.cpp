#include "core/stop_request.hpp"

#include <string>

namespace dl {

namespace {

// The flag the current scope watches; the readers' threads read it while the scope lives.
std::atomic<const std::atomic<int>*> watched{nullptr};

}  // namespace

StopRequested::StopRequested(int signal)
    : std::runtime_error("stopped by signal " + std::to_string(signal)), signal_(signal) {}

StopRequestScope::StopRequestScope(const std::atomic<int>* stop_signal) {
  watched = stop_signal;
}

StopRequestScope::~StopRequestScope() {
  watched = nullptr;
}

int stop_requested() {
  const std::atomic<int>* flag = watched.load();
  return flag != nullptr ? flag->load() : 0;
}

void throw_if_stop_requested() {
  if (const int signal = stop_requested(); signal != 0) throw StopRequested(signal);
}

}  // namespace dl
