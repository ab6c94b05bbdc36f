// data.format: imagefolder, folders of PNG and JPEG images with one subfolder per class
// (image_folder.hpp), fitted to inputType (grayscale for 1 channel, RGB for 3).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/memory_limits.hpp"
#include "data/data_format.hpp"
#include "data/image_folder.hpp"

namespace dl {
namespace {

constexpr int kGrayChannels = 1;
constexpr int kRgbChannels = 3;

// data.cacheBytes resolved, and where the number came from. auto takes half the memory this
// process may use (physical memory or its cgroup's limit), split between the run's processes on
// this machine (DataConfig::cacheSharedBy): the other half is left to the model,
// its activations, the batch buffers and the page cache holding the image files themselves. The
// limit, not the memory free at start, so that the same machine always makes the same choice.
void resolve_cache(const DataConfig& data, ImageFolderRequest& request) {
  if (data.cacheBytes) {
    request.cache_bytes = *data.cacheBytes;
    request.cache_setting = fmt::format("data.cacheBytes ({} bytes)", *data.cacheBytes);
    return;
  }
  const MemoryLimit memory = host_memory_limit();
  if (memory.bytes == 0) {
    request.cache_setting = "data.cacheBytes: auto (the memory limit is unknown: no limit)";
    return;
  }
  const auto sharers = static_cast<std::uint64_t>(std::max(1, data.cacheSharedBy));
  request.cache_bytes = memory.bytes / 2 / sharers;
  const std::string split =
      sharers == 1
          ? ""
          : fmt::format(" split between the {} processes of this run on this machine", sharers);
  request.cache_setting = fmt::format("data.cacheBytes: auto ({} bytes, half the {} bytes of {}{})",
                                      request.cache_bytes, memory.bytes, memory.source, split);
}

ImageFolderRequest folder_request(const Config& config, const std::string& directory,
                                  const std::string& key, std::int64_t limit) {
  ImageFolderRequest request;
  request.directory = directory;
  request.key = key;
  request.channels = config.inputType.channels;
  request.height = config.inputType.height;
  request.width = config.inputType.width;
  request.resize = config.data.resize;
  request.on_bad_file = config.data.onBadFile;
  request.limit = limit;
  request.num_classes = config.data.numClasses;
  resolve_cache(config.data, request);
  return request;
}

// A test or validation folder: the training folder's classes, in its order; each sample's file
// named, for eval --predictions.
Dataset read_other_folder(const Config& config, const std::string& directory,
                          const std::string& key, std::int64_t limit) {
  ImageFolderRequest request = folder_request(config, directory, key, limit);
  request.name_files = true;
  request.expected_classes =
      image_folder_classes(config.data.trainDirectory, "data.trainDirectory");
  return read_image_folder(request);
}

Dataset load_folder_split(const Config& config, DataSplit split) {
  const DataConfig& data = config.data;
  if (split == DataSplit::kTrain)
    return read_image_folder(
        folder_request(config, data.trainDirectory, "data.trainDirectory", data.trainLimit));
  return read_other_folder(config, data.testDirectory, "data.testDirectory", data.testLimit);
}

std::string folder_source(const DataConfig& data, DataSplit split) {
  return split == DataSplit::kTrain ? data.trainDirectory : data.testDirectory;
}

std::optional<Dataset> load_folder_validation(const Config& config) {
  if (!config.data.validationDirectory) return std::nullopt;
  return read_other_folder(config, *config.data.validationDirectory, "data.validationDirectory", 0);
}

std::optional<std::string> folder_validation_path(const DataConfig& data) {
  return data.validationDirectory;
}

// One image (label 0), a folder of images (label 0), or a folder of class folders (labelled by
// them, as the training folder); each sample's file is named for predict's rows.
// A folder's class folders must be the model's `classes`, checked first, as a test folder's are
// the training folder's: their count against data.numClasses, the model's, would advise setting
// it to the folder's count, which a model's classes cannot follow.
Dataset load_image_input(const std::string& path, const Config& config,
                         const std::vector<std::string>& classes) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    ImageFolderRequest request = folder_request(config, path, "--input", 0);
    request.expected_classes = classes;
    request.for_predict = true;
    request.name_files = true;
    return read_image_folder(request);
  }
  const InputTypeConfig& in = config.inputType;
  return read_image_file(path, in.channels, in.height, in.width, config.data.resize,
                         config.data.numClasses);
}

// Images are decoded to gray or RGB planes: inputType must be convolutionalFlat with 1 or 3
// channels; a validation folder excludes validationSplit.
void check_image_folder(const ReadContext& ctx, const Config& config) {
  const InputTypeConfig& in = config.inputType;
  if (in.kind != InputTypeConfig::Kind::kConvolutionalFlat ||
      (in.channels != kGrayChannels && in.channels != kRgbChannels))
    fail_at(ctx.remembered("inputType"),
            "data.format imagefolder gives images of 1 (grayscale) or 3 (RGB) channels, fitted to "
            "inputType's height and width, which inputType does not describe",
            "write inputType: {convolutionalFlat: {height: 32, width: 32, channels: 3}} (or "
            "channels: 1 for grayscale)");
  check_single_validation_source(ctx, config.data, config.data.validationDirectory.has_value(),
                                 "validationDirectory", "validationDirectory");
}

}  // namespace

DataFormatKind image_folder_data_format() {
  return {DataFormat::kImageFolder,
          "imagefolder",
          {
              text_field("trainDirectory", &DataConfig::trainDirectory),
              text_field("testDirectory", &DataConfig::testDirectory),
              optional_text_field("validationDirectory", &DataConfig::validationDirectory),
              enum_field("resize", &DataConfig::resize),
              enum_field("onBadFile", &DataConfig::onBadFile),
              optional_byte_size_field("cacheBytes", &DataConfig::cacheBytes),
          },
          check_image_folder,
          [](const Config& config) { return config.inputType.channels; },
          load_folder_split,
          folder_source,
          load_folder_validation,
          folder_validation_path,
          {"a PNG or JPEG image, a folder of them, or a folder of class folders (labelled by "
           "them)",
           load_image_input, false}};
}

}  // namespace dl
