#include "data/image_store.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "data/image_decode.hpp"
#include "data/image_resize.hpp"
#include "data/parallel_for.hpp"
#include "data/utf8_names.hpp"
#include "io/file_access.hpp"

namespace dl {
namespace {

// An image file larger than this is not a training image (a 8192 x 8192 PNG, stored, is 192 MiB).
constexpr std::uint64_t kMaxImageFileBytes = std::uint64_t{256} << 20;

std::vector<std::uint8_t> read_whole_file(const std::string& path) {
  InputFd input(path, InputRole::kData, kMaxImageFileBytes);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(input.size()));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(input.fd(), bytes.data() + done, bytes.size() - done);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace

FileDecode decode_image_file(const std::string& path, const DecodeTarget& target,
                             std::uint8_t* out) {
  FileDecode result;
  try {
    const std::vector<std::uint8_t> bytes = read_whole_file(path);
    const DecodedImage image =
        decode_image(bytes.data(), bytes.size(), target.channels, target.width, target.height);
    fit_image(image, target.height, target.width, target.resize, out);
    result.width = image.declared_width;
    result.height = image.declared_height;
  } catch (const ImageDecodeError& e) {
    result.error = e.what();
  } catch (const DataError& e) {
    // file_access's message starts with the path: keep what follows it.
    const std::string what = e.what();
    result.error = what.rfind(path + ": ", 0) == 0 ? what.substr(path.size() + 2) : what;
  }
  return result;
}

ImageStore::ImageStore(std::vector<ImageFile> files, DecodeTarget target, std::uint64_t cache_bytes)
    : files_(std::move(files)), target_(target), cache_bytes_(cache_bytes) {
  const std::size_t sample = target_.sample_bytes();
  DL_CHECK(sample > 0, "an image store's images have pixels");
  capacity_ = static_cast<std::size_t>(
      std::min<std::uint64_t>(cache_bytes_ / sample, static_cast<std::uint64_t>(files_.size())));
  cache_.reset(new std::uint8_t[capacity_ * sample]);
  states_.reset(new std::atomic<std::uint8_t>[capacity_]);
  for (std::size_t e = 0; e < capacity_; ++e) states_[e].store(kEmpty, std::memory_order_relaxed);
}

// The cache's entries are written once: the thread that moves an entry from empty to filling
// copies the image in and publishes it as ready; readers copy only ready entries. Two workers
// asking for the same entry at once both decode it (the same bits) and one of them keeps it.
std::optional<std::string> ImageStore::fetch_one(std::int64_t entry, std::uint8_t* dst) const {
  DL_CHECK(entry >= 0 && static_cast<std::size_t>(entry) < files_.size(),
           "an image store entry within the listing");
  const auto e = static_cast<std::size_t>(entry);
  const std::size_t sample = target_.sample_bytes();
  std::uint8_t* slot = e < capacity_ ? cache_.get() + e * sample : nullptr;
  if (slot != nullptr && states_[e].load(std::memory_order_acquire) == kReady) {
    std::memcpy(dst, slot, sample);
    return std::nullopt;
  }
  FileDecode decoded = decode_image_file(files_[e].path, target_, dst);
  if (decoded.error) return std::move(decoded.error);
  std::uint8_t expected = kEmpty;
  if (slot != nullptr && states_[e].compare_exchange_strong(expected, kFilling)) {
    std::memcpy(slot, dst, sample);
    states_[e].store(kReady, std::memory_order_release);
    cached_.fetch_add(1, std::memory_order_relaxed);
  }
  return std::nullopt;
}

void ImageStore::fetch(const std::int64_t* entries, std::size_t count, std::uint8_t* dst) const {
  const std::size_t sample = target_.sample_bytes();
  std::vector<std::optional<std::string>> errors(count);
  parallel_for_each_index(count, [&](std::size_t i) {
    errors[i] = fetch_one(entries[i], dst + i * sample);
    return !errors[i];
  });
  for (std::size_t i = 0; i < count; ++i)
    if (errors[i])
      throw DataError(fmt::format("{}: {}; {}",
                                  printable_path(files_[static_cast<std::size_t>(entries[i])].path),
                                  *errors[i], kBadImageFileFix));
}

ChannelByteCounts ImageStore::byte_counts(const std::vector<std::int64_t>& entries) const {
  const std::size_t sample = target_.sample_bytes();
  const std::size_t plane = static_cast<std::size_t>(target_.height) * target_.width;
  ChannelByteCounts total(static_cast<std::size_t>(target_.channels));
  for (auto& c : total) c.fill(0);
  std::mutex adding;
  std::optional<std::string> error;
  std::size_t error_at = entries.size();
  parallel_for_each_index(entries.size(), [&](std::size_t i) {
    std::vector<std::uint8_t> pixels(sample);
    std::optional<std::string> bad = fetch_one(entries[i], pixels.data());
    const ChannelByteCounts counts =
        bad ? ChannelByteCounts{}
            : channel_byte_counts(pixels.data(), sample, target_.channels, plane);
    std::lock_guard<std::mutex> lock(adding);
    if (bad && i < error_at) {
      error = std::move(bad);
      error_at = i;
    }
    // Integer counts: the order in which the threads add them changes nothing.
    for (std::size_t c = 0; c < counts.size(); ++c)
      for (int b = 0; b < kByteValues; ++b) total[c][b] += counts[c][b];
    return !error;
  });
  if (error)
    throw DataError(fmt::format(
        "{}: {}; {}", printable_path(files_[static_cast<std::size_t>(entries[error_at])].path),
        *error, kBadImageFileFix));
  return total;
}

std::uint64_t ImageStore::listing_hash(const std::vector<std::int64_t>& entries) const {
  namespace fs = std::filesystem;
  std::uint64_t hash = kFnv1aOffsetBasis;
  for (const std::int64_t entry : entries) {
    const ImageFile& f = files_[static_cast<std::size_t>(entry)];
    // The class folder and the file's name: the folder itself may be mounted elsewhere per node.
    const fs::path path(f.path);
    hash = fnv1a((path.parent_path().filename() / path.filename()).string(), hash);
    hash = fnv1a(&f.label, sizeof(f.label), hash);
  }
  return hash;
}

}  // namespace dl
