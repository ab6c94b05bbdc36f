#include "data/image_folder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "data/image_folder_listing.hpp"
#include "data/image_store.hpp"
#include "data/parallel_for.hpp"
#include "data/utf8_names.hpp"

namespace dl {
namespace {

namespace fs = std::filesystem;

DecodeTarget decode_target(const ImageFolderRequest& r) {
  return {r.channels, r.height, r.width, r.resize};
}

// Decodes every file on the readers' pool (parallel_for.hpp), file i into out(i); stops early on
// a bad file when the run would stop anyway.
template <class Out>
std::vector<FileDecode> decode_all(const std::vector<ImageFile>& files, const ImageFolderRequest& r,
                                   Out out) {
  std::vector<FileDecode> results(files.size());
  const DecodeTarget target = decode_target(r);
  parallel_for_each_index(files.size(), [&](std::size_t i) {
    results[i] = decode_image_file(files[i].path, target, out(i));
    return !(results[i].error && r.on_bad_file == BadFileAction::kStop);
  });
  return results;
}

std::vector<ImageFile> spread(std::vector<ImageFile> files, std::int64_t limit) {
  if (limit <= 0 || static_cast<std::size_t>(limit) >= files.size()) return files;
  std::vector<ImageFile> kept;
  const auto n = static_cast<std::uint64_t>(files.size());
  for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(limit); ++k)
    kept.push_back(std::move(files[static_cast<std::size_t>(k * n / limit)]));
  return kept;
}

[[noreturn]] void fail_bad_file(const BadFile& bad) {
  throw DataError(fmt::format("{}: {}; {}", bad.path, bad.why, bad.fix));
}

// The files that decoded, in listing order, with their sizes counted in `origin`; a bad file
// stops the run or is named in origin.skipped (data.onBadFile).
std::vector<std::size_t> usable_files(const std::vector<ImageFile>& files,
                                      const std::vector<FileDecode>& decoded,
                                      const ImageFolderRequest& request, DataOrigin& origin) {
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (decoded[i].error) {
      const BadFile bad{printable_path(files[i].path), *decoded[i].error};
      if (request.on_bad_file == BadFileAction::kStop) fail_bad_file(bad);
      origin.skipped.push_back(bad.path + ": " + bad.why);
      continue;
    }
    // A slot the pool left after a bad file under onBadFile: stop: the loop throws at that file.
    if (decoded[i].width == 0) continue;
    ++origin.image_sizes[fmt::format("{}x{}", decoded[i].width, decoded[i].height)];
    kept.push_back(i);
  }
  if (kept.empty())
    throw DataError(fmt::format("{}: none of its {} files is a usable image; {}", request.directory,
                                files.size(), kBadImageFileFix));
  // A class whose every file was left out would train as a class never seen, where an empty
  // class folder is refused.
  std::map<std::int32_t, std::size_t> listed, usable;
  for (const ImageFile& f : files) ++listed[f.label];
  for (const std::size_t k : kept) ++usable[files[k].label];
  for (const auto& [listed_label, count] : listed) {
    // A copy: C++17 lambdas cannot capture a structured binding (clang refuses it).
    const std::int32_t label = listed_label;
    if (usable[label] > 0) continue;
    const auto first = std::find_if(files.begin(), files.end(),
                                    [&](const ImageFile& f) { return f.label == label; });
    throw DataError(fmt::format(
        "{}: none of the class folder's {} files is a usable image (data.onBadFile: skip left "
        "every one out), which would leave the class without samples; replace its files, or "
        "remove the folder",
        printable_path(fs::path(first->path).parent_path().string()), count));
  }
  return kept;
}

// The column of predict's rows that names each image's file.
constexpr const char* kFileColumn = "file";

// A sample's file as predict names it: its path under the folder given ("cat/1.png").
std::string under(const ImageFolderRequest& request, const ImageFile& file) {
  return printable_path(fs::path(file.path).lexically_relative(request.directory).string());
}

// Every file decoded now, each into its own slot, and held (the folder fits data.cacheBytes).
Dataset read_whole(const std::vector<ImageFile>& files, const ImageFolderRequest& request,
                   DataOrigin origin) {
  const std::size_t sample_bytes = decode_target(request).sample_bytes();
  std::vector<std::uint8_t> pixels(files.size() * sample_bytes);
  const std::vector<FileDecode> decoded =
      decode_all(files, request, [&](std::size_t i) { return pixels.data() + i * sample_bytes; });
  std::vector<std::int32_t> labels;
  const std::vector<std::size_t> kept = usable_files(files, decoded, request, origin);
  for (std::size_t k = 0; k < kept.size(); ++k) {
    if (kept[k] != k)
      std::copy_n(pixels.begin() + static_cast<std::ptrdiff_t>(kept[k] * sample_bytes),
                  sample_bytes, pixels.begin() + static_cast<std::ptrdiff_t>(k * sample_bytes));
    labels.push_back(files[kept[k]].label);
  }
  pixels.resize(kept.size() * sample_bytes);
  if (request.name_files)
    for (const std::size_t k : kept)
      origin.sample_sources.names.push_back(under(request, files[k]));
  Dataset dataset(request.channels, request.height, request.width, std::move(pixels),
                  std::move(labels), request.num_classes);
  dataset.set_origin(std::move(origin));
  return dataset;
}

// The folder exceeds data.cacheBytes: its images are decoded when batches are gathered
// (image_store.hpp). Every file is decoded once now all the same, on the readers' threads, and its
// pixels dropped: a bad file is found before the run claims its directory, as in a held folder
// (with onBadFile: stop, one found mid-run had cost an --overwrite's old run, or an epoch's
// training when it lay in the test folder, and `validate` could not see it), and with skip the
// samples must be known before the first step (the epoch orders are permutations of them). The
// cost is one pass of decoding at start-up, which every epoch pays anyway.
Dataset read_streamed(std::vector<ImageFile> files, const ImageFolderRequest& request,
                      DataOrigin origin, std::uint64_t decoded_bytes) {
  const DecodeTarget target = decode_target(request);
  const std::vector<FileDecode> decoded = decode_all(files, request, [&](std::size_t) {
    thread_local std::vector<std::uint8_t> scratch;
    scratch.resize(target.sample_bytes());
    return scratch.data();
  });
  std::vector<ImageFile> kept_files;
  for (const std::size_t i : usable_files(files, decoded, request, origin))
    kept_files.push_back(std::move(files[i]));
  std::vector<std::int32_t> labels;
  for (const ImageFile& f : kept_files) {
    labels.push_back(f.label);
    if (request.name_files) origin.sample_sources.names.push_back(under(request, f));
  }
  const std::size_t count = kept_files.size();
  auto store =
      std::make_shared<const ImageStore>(std::move(kept_files), target, request.cache_bytes);
  origin.holding = fmt::format(
      "{} images streamed: their {} decoded bytes exceed {}, so each batch's images are decoded "
      "as it is gathered, up to {} of them kept decoded for later epochs",
      count, decoded_bytes, request.cache_setting, store->cache_capacity());
  Dataset dataset = Dataset::streamed(std::move(store), std::move(labels), request.num_classes);
  dataset.set_origin(std::move(origin));
  return dataset;
}

}  // namespace

Dataset read_image_folder(const ImageFolderRequest& request) {
  Listing listing = list_folder(request);
  if (!listing.bad.empty() && request.on_bad_file == BadFileAction::kStop)
    fail_bad_file(listing.bad.front());
  std::vector<ImageFile> files = spread(std::move(listing.files), request.limit);
  DataOrigin origin;
  origin.class_names = listing.class_names;
  if (request.name_files) origin.sample_sources.column = kFileColumn;
  for (const BadFile& bad : listing.bad) origin.skipped.push_back(bad.path + ": " + bad.why);
  const std::uint64_t decoded_bytes =
      static_cast<std::uint64_t>(files.size()) * decode_target(request).sample_bytes();
  if (decoded_bytes <= request.cache_bytes) {
    origin.holding = fmt::format("{} images decoded before training ({} bytes, within {})",
                                 files.size(), decoded_bytes, request.cache_setting);
    return read_whole(files, request, std::move(origin));
  }
  return read_streamed(std::move(files), request, std::move(origin), decoded_bytes);
}

Dataset read_image_file(const std::string& path, int channels, int height, int width,
                        ImageResize resize, int num_classes) {
  const DecodeTarget target{channels, height, width, resize};
  std::vector<std::uint8_t> pixels(target.sample_bytes());
  const FileDecode decoded = decode_image_file(path, target, pixels.data());
  if (decoded.error) throw DataError(fmt::format("{}: {}", printable_path(path), *decoded.error));
  Dataset dataset(channels, height, width, std::move(pixels), {0}, num_classes);
  DataOrigin origin;
  origin.image_sizes[fmt::format("{}x{}", decoded.width, decoded.height)] = 1;
  origin.sample_sources = {kFileColumn, {printable_path(path)}};
  dataset.set_origin(std::move(origin));
  return dataset;
}

std::vector<std::string> image_folder_classes(const std::string& directory,
                                              const std::string& key) {
  std::vector<std::string> names;
  for (const fs::path& f : class_folders(directory, key)) names.push_back(f.filename().string());
  return names;
}

}  // namespace dl
