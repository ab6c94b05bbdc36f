// The images of a folder too large to hold decoded (data.cacheBytes): the files stay on disk and
// each batch's images are decoded when the batch is gathered (Dataset::gather), on the readers'
// threads (parallel_for.hpp); on the training path a worker's BatchLoader does that on its
// prefetch thread, parallel.prefetchBuffer batches ahead of the step, and only for the worker's
// own samples, so an MPI rank decodes its shard alone.
//
// Images already decoded are kept in a cache of at most cache_bytes: the entries below
// cache_bytes / sample_bytes, each kept the first time it is decoded (a fixed rule rather than
// least-recently-used: no bookkeeping per access, no lock, and with shuffled epochs every entry is
// as likely to come back). Decoding is a pure function of the file, so whether an image came from
// the cache or the file never changes a bit of a batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/input_pipeline.hpp"

namespace dl {

struct ImageFile {
  std::string path;
  std::int32_t label = 0;
};

// What an image is decoded to: inputType's channels, height and width, fitted by data.resize.
struct DecodeTarget {
  int channels = 1, height = 0, width = 0;
  ImageResize resize = ImageResize::kCenterCrop;
  std::size_t sample_bytes() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }
};

struct FileDecode {
  std::optional<std::string> error;  // why the file cannot be a sample
  int width = 0, height = 0;         // as its header declares
};

// Reads, decodes and fits one file into `out` (target.sample_bytes() bytes).
FileDecode decode_image_file(const std::string& path, const DecodeTarget& target,
                             std::uint8_t* out);

// The fix a bad file's message ends with.
inline constexpr const char* kBadImageFileFix =
    "replace or remove the file, or set data.onBadFile: skip to leave such files out";

class ImageStore {
 public:
  ImageStore(std::vector<ImageFile> files, DecodeTarget target, std::uint64_t cache_bytes);
  ImageStore(const ImageStore&) = delete;
  ImageStore& operator=(const ImageStore&) = delete;

  std::size_t size() const { return files_.size(); }
  const ImageFile& file(std::size_t entry) const { return files_[entry]; }
  const DecodeTarget& target() const { return target_; }
  std::uint64_t cache_bytes() const { return cache_bytes_; }
  std::size_t cache_capacity() const { return capacity_; }  // images the cache holds
  std::size_t cached() const { return cached_.load(std::memory_order_relaxed); }

  // The pixels of `count` entries, entry i at dst + i * sample_bytes, from the cache or decoded
  // (on the readers' threads). Throws DataError "path: why; fix" for the first file (in `entries`
  // order) that cannot be decoded. Safe to call from several threads at once.
  void fetch(const std::int64_t* entries, std::size_t count, std::uint8_t* dst) const;
  // The byte counts per channel of the images at `entries` (for data.normalize without given
  // statistics): each image decoded once, on the readers' threads.
  ChannelByteCounts byte_counts(const std::vector<std::int64_t>& entries) const;
  // A hash of the listing (each file's class folder and name, and its label) for the ranks'
  // agreement: what a hash of the decoded pixels says of a cached folder, without decoding it.
  // Contents and sizes are left out: reading or stat-ing every file at start-up is the cost a
  // streamed folder exists to avoid.
  std::uint64_t listing_hash(const std::vector<std::int64_t>& entries) const;

 private:
  enum : std::uint8_t { kEmpty, kFilling, kReady };
  std::optional<std::string> fetch_one(std::int64_t entry, std::uint8_t* dst) const;

  std::vector<ImageFile> files_;
  DecodeTarget target_;
  std::uint64_t cache_bytes_;
  std::size_t capacity_;
  // Pages are touched only as images arrive: new[] without value-initialization.
  std::unique_ptr<std::uint8_t[]> cache_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> states_;
  mutable std::atomic<std::size_t> cached_{0};
};

}  // namespace dl
