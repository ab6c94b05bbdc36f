// The lock of a run directory: flock on its lock file, so that the kernel releases it when the
// holder dies, however it dies. The lock file names the holder (pid, host, start time) for the
// message that refuses a second process.
#pragma once

#include <string>

namespace dl {

// Takes the lock of `directory` (creating the lock file) and writes this process into it.
// Returns the descriptor that holds the lock; IoError naming the holder when another process
// holds it.
int take_run_directory_lock(const std::string& directory);

// Throws the same IoError when another process holds the lock of `directory`; touches nothing.
void check_run_directory_lock(const std::string& directory);

}  // namespace dl
