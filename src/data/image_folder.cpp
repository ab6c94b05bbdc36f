#include "data/image_folder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "core/error.hpp"
#include "data/image_store.hpp"
#include "data/parallel_for.hpp"
#include "data/utf8_names.hpp"

namespace dl {
namespace {

namespace fs = std::filesystem;

// A file that cannot be a sample: its path and why.
struct BadFile {
  std::string path;
  std::string why;
  const char* fix = kBadImageFileFix;
};

// A folder inside a class folder is no file to replace.
constexpr const char* kNestedFolderFix =
    "move its images up into the class folder, or remove it; or set data.onBadFile: skip to "
    "leave it out";

struct Listing {
  std::vector<std::string> class_names;
  std::vector<ImageFile> files;
  std::vector<BadFile> bad;  // found while listing (names, links, folders)
};

// Why a path cannot be read, and the fix.
std::string unreadable(const std::error_code& error) {
  if (error.value() == ELOOP)
    return fmt::format(
        "cannot be read: a symbolic-link loop ({}); point the link at a real "
        "file or folder, or remove it",
        error.message());
  return fmt::format("cannot be read: {}; check the path and its permissions", error.message());
}

std::string folder_error(const std::string& where, const std::error_code& error) {
  return printable_path(where) + ": " + unreadable(error);
}

// Files Windows Explorer writes into folders of pictures (thumbnail caches, folder settings), and
// the __MACOSX folder of resource forks a zip made on macOS unpacks: never samples nor classes,
// so left out like hidden files, as torchvision's ImageFolder and Keras leave them out (by their
// extension, or as a folder of no images).
bool is_system_metadata(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "thumbs.db" || name == "ehthumbs.db" || name == "desktop.ini" ||
         name == "__macosx";
}

// The entries of `dir` in byte order of their names, hidden ones ('.' first) and system metadata
// files left out.
std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) throw DataError(folder_error(dir.string(), error));
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error) throw DataError(folder_error(dir.string(), error));
    const std::string name = it->path().filename().string();
    if (name.rfind('.', 0) == 0 || is_system_metadata(name)) continue;
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
    throw DataError(
        fmt::format("{}: missing; {} names a folder with one subfolder of images per "
                    "class: fix the path",
                    directory, key));
  if (!fs::is_directory(status))
    throw DataError(
        fmt::format("{}: is not a folder; {} names a folder with one subfolder of "
                    "images per class",
                    directory, key));
}

// Whether `folder` holds folders only, one at least, among the entries sorted_entries would list:
// the first file ends the listing, so a class folder of a million images costs one read.
bool holds_only_folders(const fs::path& folder) {
  std::error_code error;
  bool any = false;
  for (fs::directory_iterator it(folder, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind('.', 0) == 0 || is_system_metadata(name)) continue;
    std::error_code kind;
    if (!it->is_directory(kind) || kind) return false;
    any = true;
  }
  return any && !error;
}

// A folder whose every subfolder holds only folders is the one above the class folders (the
// data set's folder holding train/ and test/, say), which would read as a few classes.
void check_not_above_classes(const std::string& directory, const std::string& key,
                             const std::vector<fs::path>& folders) {
  for (const fs::path& f : folders)
    if (!holds_only_folders(f)) return;
  std::vector<std::string> names;
  for (const fs::path& f : folders) names.push_back(f.filename().string());
  // The subfolder the key's split names, where there is one.
  const std::string split = key.find("test") != std::string::npos         ? "test"
                            : key.find("validation") != std::string::npos ? "val"
                                                                          : "train";
  const auto match = std::find_if(names.begin(), names.end(), [&](const std::string& n) {
    return n.rfind(split, 0) == 0;
  });
  throw DataError(fmt::format(
      "{}: its folders ({}) hold folders, not images: {} names the folder whose subfolders are "
      "the classes; set it to {}/{}",
      printable_path(directory), fmt::join(names, ", "), key, printable_path(directory),
      match != names.end() ? *match : names.front()));
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
      throw DataError(
          fmt::format("{}: the class folder's name is not UTF-8 or holds a control "
                      "character; rename it (class names are written to the run's "
                      "files)",
                      printable_path(entry.path().string())));
    folders.push_back(entry.path());
  }
  if (folders.empty())
    throw DataError(
        fmt::format("{}: has no class folders; {} names a folder with one subfolder "
                    "per class (e.g. {}/cat/1.png, {}/dog/2.jpg)",
                    directory, key, directory, directory));
  check_not_above_classes(directory, key, folders);
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
      listing.bad.push_back({printable_path(path),
                             "is a folder inside a class folder; images go "
                             "directly in their class's folder",
                             kNestedFolderFix});
    } else if (!is_valid_utf8(entry.path().filename().string())) {
      listing.bad.push_back({printable_path(path), "the file name is not UTF-8; rename it"});
    } else {
      listing.files.push_back({path, label});
    }
  }
  if (found == 0)
    throw DataError(
        fmt::format("{}: the class folder holds no images; add the class's images or "
                    "remove the folder",
                    printable_path(folder.string())));
}

// Whether a folder's `entries` hold no subfolder (then, for predict, it is a folder of unlabelled
// images).
bool holds_no_folder(const std::vector<fs::directory_entry>& entries) {
  for (const fs::directory_entry& entry : entries) {
    std::error_code error;
    if (entry.is_directory(error) || error) return false;
  }
  return true;
}

Listing list_folder(const ImageFolderRequest& request) {
  Listing listing;
  if (request.for_predict) {
    check_is_folder(request.directory, request.key);
    const std::vector<fs::directory_entry> entries = sorted_entries(request.directory);
    if (holds_no_folder(entries)) {
      if (entries.empty())
        throw DataError(
            fmt::format("{}: the folder is empty; give {} a PNG or JPEG image, a "
                        "folder of them, or a folder of class folders",
                        printable_path(request.directory), request.key));
      list_class(request.directory, 0, listing);
      return listing;
    }
  }
  const std::vector<fs::path> folders = class_folders(request.directory, request.key);
  for (const fs::path& f : folders) listing.class_names.push_back(f.filename().string());
  if (!request.expected_classes.empty() && listing.class_names != request.expected_classes) {
    // Names that print alike but differ in their bytes: one folder's accents decomposed.
    const auto decomposed = [](const std::vector<std::string>& names) {
      return std::any_of(names.begin(), names.end(), has_combining_accent);
    };
    const bool forms = decomposed(listing.class_names) != decomposed(request.expected_classes);
    throw DataError(fmt::format(
        "{}: its class folders ({}) are not the training folder's ({}); every folder of a data "
        "set has the same class folders{}",
        request.directory, fmt::join(listing.class_names, ", "),
        fmt::join(request.expected_classes, ", "),
        forms ? " (the names differ in their Unicode form: one folder's accents are written "
                "decomposed, as macOS writes file names (NFD), the other's composed (NFC); "
                "rename one folder's class folders to match the other's byte for byte)"
              : ""));
  }
  if (static_cast<int>(folders.size()) != request.num_classes)
    throw DataError(
        fmt::format("{}: has {} class folders but data.numClasses is {}; set "
                    "data.numClasses: {}",
                    request.directory, folders.size(), request.num_classes, folders.size()));
  for (std::size_t c = 0; c < folders.size(); ++c)
    list_class(folders[c], static_cast<std::int32_t>(c), listing);
  return listing;
}

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
