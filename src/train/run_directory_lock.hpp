// The lock of a run directory: flock on its lock file, so that the kernel releases it when the
// holder dies, however it dies. The lock file names the holder (pid, host, start time) for the
// message that refuses a second process. Where the file system has no flock (it fails with
// ENOLCK, EOPNOTSUPP, ENOSYS or EINVAL: Lustre mounted with noflock, some NFS mounts), the lock is
// a claim file instead (run_directory_claim.hpp), said once on standard error.
#pragma once

#include <string>

#include "train/run_directory_claim.hpp"

namespace dl {

// Held for as long as the object lives: the flock's descriptor, or the claim file.
class RunDirectoryLock {
 public:
  RunDirectoryLock() = default;
  ~RunDirectoryLock() { release(); }
  RunDirectoryLock(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock& operator=(RunDirectoryLock&& other) noexcept;
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

  bool uses_claim_file() const { return claim_.held(); }
  void release();

 private:
  friend RunDirectoryLock take_run_directory_lock(const std::string& directory);
  int fd_ = -1;
  RunDirectoryClaim claim_;
};

// Takes the lock of `directory` (creating the lock file) and writes this process into it; where
// flock is missing, claims the directory by its claim file. IoError naming the holder when
// another process holds either.
RunDirectoryLock take_run_directory_lock(const std::string& directory);

// Throws the same IoError when another process holds the lock or the claim of `directory`;
// touches nothing.
void check_run_directory_lock(const std::string& directory);

}  // namespace dl
