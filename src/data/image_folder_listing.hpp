// The listing of an image folder (image_folder.hpp): its class folders in byte order of their
// names, each class folder's files, and the entries that cannot be samples (folders inside a
// class folder, names that are not UTF-8, unreadable links), before any file is decoded.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/image_folder.hpp"
#include "data/image_store.hpp"

namespace dl {

// A file that cannot be a sample: its path and why.
struct BadFile {
  std::string path;
  std::string why;
  const char* fix = kBadImageFileFix;
};

struct Listing {
  std::vector<std::string> class_names;
  std::vector<ImageFile> files;
  std::vector<BadFile> bad;  // found while listing (names, links, folders)
};

// The class folders of `directory` (a folder named by `key`), refusing a folder with none, one
// whose subfolders hold only folders (the folder above train/ and test/), and names that are not
// UTF-8.
std::vector<std::filesystem::path> class_folders(const std::string& directory,
                                                 const std::string& key);

// The classes and files of request.directory (for predict, also a folder of images alone), the
// class folders checked against request.expected_classes and request.num_classes.
Listing list_folder(const ImageFolderRequest& request);

}  // namespace dl
