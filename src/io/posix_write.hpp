// The write loop shared by the file writers of src/io.
#pragma once

#include <cstddef>
#include <string>

namespace dl {

// Writes all `size` bytes of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the
// errno of the failure (ENOSPC, EFBIG, EIO, ...).
int write_all(int fd, const void* data, std::size_t size);

// What to check after writing an output failed with `err` (from open, write, fsync, rename), for
// the end of its message: the limit on open files for EMFILE and ENFILE, else free disk space,
// write permission and the file size limit.
std::string write_failure_fix(int err);

}  // namespace dl
