// A sequential byte source over a file that may or may not be gzip-compressed. zlib's gz* API
// recognises the gzip magic (1f 8b) itself and reads other files unchanged, so the caller never
// looks at the file name. Errors become DataErrors that name the file.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dl {

// What the reader expects the path to be, for the message when it names a folder: "an IDX file"
// with "train-images-idx3-ubyte.gz", "a CIFAR-10 batch file" with "test_batch.bin".
struct ExpectedFile {
  std::string what;
  std::string example_name;
};

class GzInput {
 public:
  // Throws DataError when the file cannot be opened (the message carries strerror).
  GzInput(const std::string& path, const ExpectedFile& expected);
  ~GzInput();
  GzInput(const GzInput&) = delete;
  GzInput& operator=(const GzInput&) = delete;

  // Reads up to `n` bytes into `dst` and returns how many were read: fewer than `n` only at the
  // end of the data. Throws DataError on a read error or corrupt gzip data (zlib's message).
  std::size_t read(void* dst, std::size_t n);

  // True when the data is gzip-compressed (known after the first read).
  bool compressed() const;
  // True when the gzip stream itself ended before its trailer: the file was cut off.
  bool stream_cut_off() const { return stream_cut_off_; }
  const std::string& path() const { return path_; }
  // The fix for a file found damaged or cut off: a published data set's file is downloaded again
  // (the download scripts fetch it); a user's own file is written again by what made it.
  std::string damaged_fix() const;

 private:
  std::string path_;
  gzFile file_ = nullptr;
  bool stream_cut_off_ = false;
  std::uint64_t bytes_read_ = 0;  // decompressed bytes handed out so far
};

}  // namespace dl
