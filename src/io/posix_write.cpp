#include "io/posix_write.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace dl {

namespace {
// Linux transfers at most about 2 GiB per write(); larger buffers go in chunks of this size.
constexpr std::size_t kMaxWriteChunk = std::size_t{1} << 30;
}  // namespace

std::string write_failure_fix(int err) {
  // Out of descriptors, an output cannot even be opened: no disk or permission is at fault.
  if (err == EMFILE) return "raise this process's limit on open files (ulimit -n)";
  if (err == ENFILE) return "the system has run out of open files: close other programs";
  return "check free disk space, write permission and the file size limit (ulimit -f)";
}

int write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, p, std::min(size, kMaxWriteChunk));
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // A regular file accepting nothing without an error is out of space in all but name.
    if (written == 0) return ENOSPC;
    p += written;
    size -= static_cast<std::size_t>(written);
  }
  return 0;
}

}  // namespace dl
