#include "data/image_folder.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "data/image_decode.hpp"
#include "data/image_resize.hpp"
#include "data/parallel_for.hpp"
#include "data/utf8_names.hpp"
#include "io/file_access.hpp"

namespace dl {
namespace {

namespace fs = std::filesystem;

// An image file larger than this is not a training image (a 8192 x 8192 PNG, stored, is 192 MiB).
constexpr std::uint64_t kMaxImageFileBytes = std::uint64_t{256} << 20;
constexpr const char* kBadFileFix =
    "replace or remove the file, or set data.onBadFile: skip to leave such files out";

struct ImageFile {
  std::string path;
  std::int32_t label = 0;
};

// A file that cannot be a sample: its path and why.
struct BadFile {
  std::string path;
  std::string why;
};

struct Listing {
  std::vector<std::string> class_names;
  std::vector<ImageFile> files;
  std::vector<BadFile> bad;  // found while listing (names, links, folders)
};

// Why a path cannot be read, and the fix.
std::string unreadable(const std::error_code& error) {
  if (error.value() == ELOOP)
    return fmt::format("cannot be read: a symbolic-link loop ({}); point the link at a real "
                       "file or folder, or remove it",
                       error.message());
  return fmt::format("cannot be read: {}; check the path and its permissions", error.message());
}

std::string folder_error(const std::string& where, const std::error_code& error) {
  return printable_path(where) + ": " + unreadable(error);
}

// The entries of `dir` in byte order of their names, hidden ones ('.' first) left out.
std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) throw DataError(folder_error(dir.string(), error));
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error) throw DataError(folder_error(dir.string(), error));
    if (it->path().filename().string().rfind('.', 0) == 0) continue;
    entries.push_back(*it);
  }
  if (error) throw DataError(folder_error(dir.string(), error));
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.path().filename().string() < b.path().filename().string();
  });
  return entries;
}

void check_is_folder(const std::string& directory, const std::string& key) {
  std::error_code error;
  const fs::file_status status = fs::status(directory, error);
  if (error && error.value() != ENOENT) throw DataError(folder_error(directory, error));
  if (!fs::exists(status))
    throw DataError(fmt::format("{}: missing; {} names a folder with one subfolder of images per "
                                "class: fix the path",
                                directory, key));
  if (!fs::is_directory(status))
    throw DataError(fmt::format("{}: is not a folder; {} names a folder with one subfolder of "
                                "images per class",
                                directory, key));
}

std::vector<fs::path> class_folders(const std::string& directory, const std::string& key) {
  check_is_folder(directory, key);
  std::vector<fs::path> folders;
  for (const fs::directory_entry& entry : sorted_entries(directory)) {
    const std::string name = entry.path().filename().string();
    std::error_code error;
    const bool folder = entry.is_directory(error);
    if (error) throw DataError(folder_error(entry.path().string(), error));
    if (!folder) continue;
    if (!is_valid_utf8(name) || has_control_character(name))
      throw DataError(fmt::format("{}: the class folder's name is not UTF-8 or holds a control "
                                  "character; rename it (class names are written to the run's "
                                  "files)",
                                  printable_path(entry.path().string())));
    folders.push_back(entry.path());
  }
  if (folders.empty())
    throw DataError(fmt::format("{}: has no class folders; {} names a folder with one subfolder "
                                "per class (e.g. {}/cat/1.png, {}/dog/2.jpg)",
                                directory, key, directory, directory));
  return folders;
}

// The image files of one class folder; names, links and folders that cannot be samples in `bad`.
void list_class(const fs::path& folder, std::int32_t label, Listing& listing) {
  std::size_t found = 0;
  for (const fs::directory_entry& entry : sorted_entries(folder)) {
    const std::string path = entry.path().string();
    std::error_code error;
    const fs::file_status status = entry.status(error);
    if (error) {
      listing.bad.push_back({printable_path(path), unreadable(error)});
      continue;
    }
    ++found;
    if (fs::is_directory(status)) {
      listing.bad.push_back({printable_path(path), "is a folder inside a class folder; images go "
                                                   "directly in their class's folder"});
    } else if (!is_valid_utf8(entry.path().filename().string())) {
      listing.bad.push_back({printable_path(path), "the file name is not UTF-8; rename it"});
    } else {
      listing.files.push_back({path, label});
    }
  }
  if (found == 0)
    throw DataError(fmt::format("{}: the class folder holds no images; add the class's images or "
                                "remove the folder",
                                printable_path(folder.string())));
}

Listing list_folder(const ImageFolderRequest& request) {
  Listing listing;
  const std::vector<fs::path> folders = class_folders(request.directory, request.key);
  for (const fs::path& f : folders) listing.class_names.push_back(f.filename().string());
  if (!request.expected_classes.empty() && listing.class_names != request.expected_classes)
    throw DataError(fmt::format(
        "{}: its class folders ({}) are not the training folder's ({}); every folder of a data "
        "set has the same class folders",
        request.directory, fmt::join(listing.class_names, ", "),
        fmt::join(request.expected_classes, ", ")));
  if (static_cast<int>(folders.size()) != request.num_classes)
    throw DataError(fmt::format("{}: has {} class folders but data.numClasses is {}; set "
                                "data.numClasses: {}",
                                request.directory, folders.size(), request.num_classes,
                                folders.size()));
  for (std::size_t c = 0; c < folders.size(); ++c)
    list_class(folders[c], static_cast<std::int32_t>(c), listing);
  return listing;
}

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

struct Decoded {
  std::optional<std::string> error;  // why the file is bad
  int width = 0, height = 0;         // as declared
};

// Reads, decodes and fits one file into `out`.
Decoded decode_file(const ImageFile& file, const ImageFolderRequest& r, std::uint8_t* out) {
  Decoded result;
  try {
    const std::vector<std::uint8_t> bytes = read_whole_file(file.path);
    const DecodedImage image =
        decode_image(bytes.data(), bytes.size(), r.channels, r.width, r.height);
    fit_image(image, r.height, r.width, r.resize, out);
    result.width = image.declared_width;
    result.height = image.declared_height;
  } catch (const ImageDecodeError& e) {
    result.error = e.what();
  } catch (const DataError& e) {
    // file_access's message starts with the path: keep what follows it.
    const std::string what = e.what();
    result.error = what.rfind(file.path + ": ", 0) == 0 ? what.substr(file.path.size() + 2) : what;
  }
  return result;
}

// Decodes every file on the readers' pool (parallel_for.hpp), each into its own slot; stops early
// on a bad file when the run would stop anyway.
std::vector<Decoded> decode_all(const std::vector<ImageFile>& files, const ImageFolderRequest& r,
                                std::vector<std::uint8_t>& pixels, std::size_t sample_bytes) {
  std::vector<Decoded> results(files.size());
  parallel_for_each_index(files.size(), [&](std::size_t i) {
    results[i] = decode_file(files[i], r, pixels.data() + i * sample_bytes);
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
  throw DataError(fmt::format("{}: {}; {}", bad.path, bad.why, kBadFileFix));
}

}  // namespace

Dataset read_image_folder(const ImageFolderRequest& request) {
  Listing listing = list_folder(request);
  if (!listing.bad.empty() && request.on_bad_file == BadFileAction::kStop)
    fail_bad_file(listing.bad.front());
  const std::vector<ImageFile> files = spread(std::move(listing.files), request.limit);
  const std::size_t sample_bytes =
      static_cast<std::size_t>(request.channels) * request.height * request.width;
  std::vector<std::uint8_t> pixels(files.size() * sample_bytes);
  const std::vector<Decoded> decoded = decode_all(files, request, pixels, sample_bytes);
  DataOrigin origin;
  origin.class_names = listing.class_names;
  for (const BadFile& bad : listing.bad) origin.skipped.push_back(bad.path + ": " + bad.why);
  std::vector<std::int32_t> labels;
  std::size_t kept = 0;
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
    if (kept != i)
      std::copy_n(pixels.begin() + static_cast<std::ptrdiff_t>(i * sample_bytes), sample_bytes,
                  pixels.begin() + static_cast<std::ptrdiff_t>(kept * sample_bytes));
    labels.push_back(files[i].label);
    ++kept;
  }
  if (kept == 0)
    throw DataError(fmt::format("{}: none of its {} files is a usable image; {}",
                                request.directory, files.size(), kBadFileFix));
  pixels.resize(kept * sample_bytes);
  Dataset dataset(request.channels, request.height, request.width, std::move(pixels),
                  std::move(labels), request.num_classes);
  dataset.set_origin(std::move(origin));
  return dataset;
}

Dataset read_image_file(const std::string& path, int channels, int height, int width,
                        ImageResize resize, int num_classes) {
  ImageFolderRequest request;
  request.channels = channels;
  request.height = height;
  request.width = width;
  request.resize = resize;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(channels) * height * width);
  const Decoded decoded = decode_file({path, 0}, request, pixels.data());
  if (decoded.error) throw DataError(fmt::format("{}: {}", printable_path(path), *decoded.error));
  Dataset dataset(channels, height, width, std::move(pixels), {0}, num_classes);
  DataOrigin origin;
  origin.image_sizes[fmt::format("{}x{}", decoded.width, decoded.height)] = 1;
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
