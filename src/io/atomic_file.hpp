// Whole-file replacement that a crash or a full disk can never leave half-written: readers see
// either the previous file or the complete new one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dl {

// A run of bytes owned by the caller; it must stay valid for the duration of the call using it.
struct ByteSpan {
  const void* data = nullptr;
  std::size_t size = 0;
};

// Writes `bytes` to "<path>.tmp-<pid>", fsyncs it, renames it over `path` and fsyncs the
// directory. On any failure (ENOSPC, EACCES, EROFS, EFBIG, ...) removes the temporary file,
// leaves an existing `path` as it was and throws IoError naming the path and the system's reason.
// Whatever is at `path` (a link, a device) is replaced by the rename, never written through: the
// files dl-train names itself, in a run directory, are created, never followed.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The same for content given as pieces written back to back, so that large buffers (parameters)
// are written from where they are, without a concatenated copy.
void write_file_atomically(const std::string& path, const std::vector<ByteSpan>& pieces);

// Writes a file the user named on the command line (predict's and export's -o, eval's
// --predictions, report's --output) as a shell's redirection would: a device, a FIFO or a link
// into /proc (/dev/null, /dev/full, a named pipe, /dev/stdout on a terminal, a pipe or a file) is
// written into, never replaced; a FIFO no process reads, or a directory, is an IoError naming it;
// anything else goes through write_file_atomically.
void write_named_output(const std::string& path, const std::string& bytes);

// A file a command reads, as its option names it: {"--model", "runs/a/model.dlm"}.
struct NamedInput {
  std::string option;
  std::string path;
};

// Refuses, with an IoError (exit 6) and before anything is written, an output path (given as
// `option`) that is the very file one of `inputs` names: write_file_atomically would replace it,
// so a command's result would silently destroy its own model, config or data. Compared by device
// and inode, so another spelling of the path or a symbolic link to the input is caught too; an
// output that is itself a symbolic link is not, as the rename replaces the link, not its target.
void refuse_output_over_inputs(const std::string& output, const std::string& option,
                               const std::vector<NamedInput>& inputs);

// "<path>.tmp-<pid>": the temporary file write_file_atomically writes for `path`.
std::string temporary_path(const std::string& path, long pid);
// The longest temporary_path of `path` any process can have, for checks of path lengths.
std::string longest_temporary_path(const std::string& path);

// Makes SIGXFSZ ignored, so that exceeding RLIMIT_FSIZE fails write() with EFBIG (reported as an
// IoError) instead of killing the process with a core dump. Every writer in src/io calls it;
// calling it again is harmless.
void ignore_file_size_signal();

}  // namespace dl
