// Reader for image folders (data.format: imagefolder): a folder holding one subfolder per class,
// each holding that class's PNG and JPEG images (Keras's image_dataset_from_directory, PyTorch's
// ImageFolder). Classes are the subfolders' names in byte order (label 0 is the first); the
// files of a class are read in byte order of their names; names starting with '.' are ignored.
// Every file is decoded and fitted to the input (image_resize.hpp) on a pool of threads, each
// image into its own slot, so the result does not depend on the thread count: all of them before
// training when their decoded bytes fit data.cacheBytes, else each batch's as it is gathered
// (image_store.hpp), the same bits either way.
//
// Every defect is a DataError "path: what is wrong; what to do": a missing folder, a folder with
// no class folders, an empty class folder, a name that is not UTF-8, a symbolic-link loop, and,
// unless onBadFile is skip, an unreadable file, a file that is not a PNG or JPEG, a corrupt or
// truncated image and one whose header declares absurd dimensions (image_decode.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/dataset.hpp"

namespace dl {

struct ImageFolderRequest {
  std::string directory;
  std::string key;  // the config key that named it, for messages ("data.trainDirectory")
  int channels = 1, height = 0, width = 0;
  ImageResize resize = ImageResize::kCenterCrop;
  BadFileAction on_bad_file = BadFileAction::kStop;
  std::int64_t limit = 0;  // > 0: this many files, spread evenly over the listing
  int num_classes = 0;
  // The training folder's classes, which a test or validation folder must have; empty for the
  // training folder itself.
  std::vector<std::string> expected_classes;
  // For predict: a folder that holds images and no subfolders is read as those images, unlabelled
  // (label 0, no class names).
  bool for_predict = false;
  // Each sample's file is named in DataOrigin::sample_sources (the rows of predict and of eval
  // --predictions).
  bool name_files = false;
  // data.cacheBytes resolved: a folder whose decoded images take more is streamed
  // (image_store.hpp); `cache_setting` says where the number came from, for the log.
  std::uint64_t cache_bytes = UINT64_MAX;
  std::string cache_setting = "no cache limit";
};

Dataset read_image_folder(const ImageFolderRequest& request);

// One image file (`predict --input IMAGE`), its label 0, named in DataOrigin::sample_sources.
Dataset read_image_file(const std::string& path, int channels, int height, int width,
                        ImageResize resize, int num_classes);

// The class names of a folder (its subfolders, sorted), checked as read_image_folder does.
std::vector<std::string> image_folder_classes(const std::string& directory, const std::string& key);

}  // namespace dl
