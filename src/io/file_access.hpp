// How dl-train opens files, in one place: inputs (config, data, checkpoints, models) only when
// they are regular files, checked on the open descriptor so that a FIFO never blocks and a device
// is never read; outputs in the run directory never through a symbolic link. Built before the
// config and data libraries (top-level meson.build) so that every reader can use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace dl {

// What an input is, for its message and its exit code.
enum class InputRole {
  kConfig,      // --config: ConfigError (2)
  kData,        // data files: DataError (3)
  kCheckpoint,  // checkpoints and model files: CheckpointError (4)
  kRunFile,     // a run directory's logs that `report` reads: exit 2, as a wrong run directory
  kRunOutput,   // the logs a training run reads back from its own directory (resume, its report):
                // IoError (6), as an output in its place that cannot be written
};

// The largest config file read: configs are a few KiB, so anything bigger is a wrong path.
inline constexpr std::uint64_t kMaxConfigBytes = std::uint64_t{1} << 20;

// Whether `path` names a file of the published data sets the download scripts fetch (MNIST's
// and Fashion-MNIST's IDX files, CIFAR's batches), whose absence or damage those scripts mend; a
// user's own images, IDX or CSV files they do not.
bool is_published_data_file(const std::string& path);

// An open input file: a regular file, its size known before anything is read.
class InputFd {
 public:
  // Opens `path` read-only without blocking (O_NONBLOCK, cleared once it is known to be a
  // regular file) and refuses, with the role's error, anything that is not a regular file or is
  // larger than `max_bytes` (0: no limit). The message names the file, what it is and the fix.
  InputFd(const std::string& path, InputRole role, std::uint64_t max_bytes = 0);
  ~InputFd();
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  // Bytes the file occupies on disk (st_blocks): far below size() for a sparse file.
  std::uint64_t allocated_bytes() const { return allocated_; }
  // Hands the descriptor over (e.g. to zlib's gzdopen), which then closes it.
  int release();

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t allocated_ = 0;
};

// What a file system object is, in words: "a FIFO (named pipe)", "a directory", ...
std::string describe_file_type(unsigned mode);

// Reads a whole input text file (regular, at most `max_bytes`; 0: no limit), with the role's error
// otherwise; a file that grows while it is read is held to the same limit. Text in UTF-16 or
// UTF-32 (by its byte order mark, or the NUL bytes of its ASCII characters) is refused naming
// the encoding and how to save it as UTF-8.
std::string read_input_text(const std::string& path, InputRole role, std::uint64_t max_bytes);
// The same for a file that may be missing (nothing then, a dangling link included); anything but a
// regular file in its place (a FIFO, which would block the read) is refused with the role's error.
std::optional<std::string> read_optional_text(const std::string& path, InputRole role,
                                              std::uint64_t max_bytes);

// Reads a whole config file (regular, at most kMaxConfigBytes); ConfigError otherwise.
std::string read_config_text(const std::string& path);

// Opens a file of the run directory for writing without following a symbolic link at `path`
// (O_NOFOLLOW). `flags` are added to O_WRONLY|O_CLOEXEC|O_NOFOLLOW. Returns the descriptor, or
// -1 with errno set; ELOOP means `path` is a symbolic link.
int open_output(const std::string& path, int flags, unsigned mode = 0644);

// Creates a new temporary file at `path` (O_CREAT|O_EXCL|O_NOFOLLOW): a file left there by a
// dead process with this process id is removed first (unlink removes a link, never its target).
// Returns the descriptor, or -1 with errno set.
int create_temporary(const std::string& path, unsigned mode = 0644);

}  // namespace dl
