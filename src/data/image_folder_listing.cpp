// The listing of an image folder (image_folder_listing.hpp): class folders, their image files,
// and what cannot be a sample.
#include "data/image_folder_listing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>

#include "core/error.hpp"
#include "data/utf8_names.hpp"

namespace dl {

namespace fs = std::filesystem;

namespace {

// A folder inside a class folder is no file to replace.
constexpr const char* kNestedFolderFix =
    "move its images up into the class folder, or remove it; or set data.onBadFile: skip to "
    "leave it out";

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
  const auto match = std::find_if(names.begin(), names.end(),
                                  [&](const std::string& n) { return n.rfind(split, 0) == 0; });
  throw DataError(fmt::format(
      "{}: its folders ({}) hold folders, not images: {} names the folder whose subfolders are "
      "the classes; set it to {}/{}",
      printable_path(directory), fmt::join(names, ", "), key, printable_path(directory),
      match != names.end() ? *match : names.front()));
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

}  // namespace

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
  // Each class folder listed first: an empty one is refused as such, not counted as a class to
  // set data.numClasses to (after which it was refused as empty).
  for (std::size_t c = 0; c < folders.size(); ++c)
    list_class(folders[c], static_cast<std::int32_t>(c), listing);
  if (static_cast<int>(folders.size()) != request.num_classes)
    throw DataError(
        fmt::format("{}: has {} class folders but data.numClasses is {}; set "
                    "data.numClasses: {}",
                    request.directory, folders.size(), request.num_classes, folders.size()));
  return listing;
}

}  // namespace dl
