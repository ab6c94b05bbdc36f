// Runs code with the process's limit on open files (RLIMIT_NOFILE) at its lowest free descriptor,
// so that the next open fails with EMFILE, as in a process that has run out of descriptors
// (ulimit -n). The limit is restored before returning.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "core/error.hpp"

namespace dl::test {

// What the IoError that `body` threw said, with no descriptor left to open; "" if it threw none.
inline std::string io_error_without_descriptors(const std::function<void()>& body) {
  const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (lowest < 0) return "no descriptor to begin with";
  ::close(lowest);
  rlimit before{};
  if (::getrlimit(RLIMIT_NOFILE, &before) != 0) return "getrlimit failed";
  const rlimit narrowed{static_cast<rlim_t>(lowest), before.rlim_max};
  if (::setrlimit(RLIMIT_NOFILE, &narrowed) != 0) return "setrlimit failed";
  std::string what;
  try {
    body();
  } catch (const IoError& e) {
    what = e.what();
  } catch (...) {
    ::setrlimit(RLIMIT_NOFILE, &before);
    throw;
  }
  ::setrlimit(RLIMIT_NOFILE, &before);
  return what;
}

}  // namespace dl::test
