#include "data/data_sources.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "data/cifar_format.hpp"
#include "data/cifar_reader.hpp"
#include "data/idx_reader.hpp"
#include "data/validation_split.hpp"

namespace dl {
namespace {

CifarSource cifar_source(const DataConfig& data, DataFormat format) {
  CifarSource source;
  source.directory = data.directory;
  source.cifar100 = format == DataFormat::kCifar100;
  source.coarse_labels = data.cifar100Labels == Cifar100Labels::kCoarse;
  return source;
}

Dataset cifar_dataset(CifarRecords records, int num_classes) {
  return Dataset(cifar::kChannels, cifar::kSide, cifar::kSide, std::move(records.pixels),
                 std::move(records.labels), num_classes);
}

Dataset load_split(const DataConfig& data, CifarSplit split) {
  const bool train = split == CifarSplit::kTrain;
  const std::int64_t limit = train ? data.trainLimit : data.testLimit;
  if (data.format == DataFormat::kIdx) {
    return train ? Dataset::load_idx(data.trainImages, data.trainLabels, data.numClasses, limit)
                 : Dataset::load_idx(data.testImages, data.testLabels, data.numClasses, limit);
  }
  return cifar_dataset(read_cifar_split(cifar_source(data, data.format), split, limit),
                       data.numClasses);
}

std::string split_source(const DataConfig& data, CifarSplit split) {
  if (data.format == DataFormat::kIdx)
    return split == CifarSplit::kTrain ? data.trainImages : data.testImages;
  const std::vector<std::string> files = cifar_split_files(cifar_source(data, data.format), split);
  if (files.size() == 1) return files.front();
  // data_batch_1.bin ... data_batch_5.bin: "DIR/data_batch_*.bin"
  const std::filesystem::path first(files.front());
  const std::string name = first.filename().string();
  return (first.parent_path() / (name.substr(0, name.find_last_of('_') + 1) + "*.bin")).string();
}

// data.validationFile: one batch file of the format, named in the message when it is missing.
Dataset load_validation_file(const DataConfig& data) {
  const std::string path = validation_source(data);
  const CifarSource source = cifar_source(data, data.format);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw DataError(fmt::format(
        "{}: {}; data.validationFile names one {} batch file (a bare name such as test_batch.bin "
        "is read in data.directory, {}): fix the name, or run scripts/fetch_cifar10.sh",
        path, std::filesystem::exists(path, error) ? "is not a regular file" : "missing",
        cifar_name(source), data.directory));
  }
  return cifar_dataset(read_cifar_file(path, source), data.numClasses);
}

}  // namespace

Dataset load_training_set(const DataConfig& data) {
  return load_split(data, CifarSplit::kTrain);
}

Dataset load_test_set(const DataConfig& data) {
  return load_split(data, CifarSplit::kTest);
}

TrainingData load_training_data(const DataConfig& data, std::uint64_t seed) {
  Dataset all = load_training_set(data);
  if (data.validationFile) return {std::move(all), load_validation_file(data)};
  if (data.validationImages) {
    return {std::move(all),
            Dataset::load_idx(*data.validationImages, *data.validationLabels, data.numClasses)};
  }
  if (data.validationSplit <= 0.0) return {std::move(all), std::nullopt};
  TrainValidation parts =
      split_for_validation(all, data.validationSplit, seed, training_source(data));
  return {std::move(parts.train), std::move(parts.validation)};
}

std::string validation_source(const DataConfig& data) {
  if (data.validationFile) {
    const std::string& file = *data.validationFile;
    if (file.find('/') != std::string::npos) return file;
    return (std::filesystem::path(data.directory) / file).string();
  }
  if (data.validationImages) return *data.validationImages;
  return fmt::format("{} (validationSplit {})", training_source(data), data.validationSplit);
}

InputPipeline input_pipeline(const DataConfig& data, std::uint64_t seed, const Dataset& train) {
  InputPipeline p;
  p.seed = seed;
  p.crop_padding = data.randomCrop;
  p.horizontal_flip = data.horizontalFlip;
  if (!data.normalize) return p;
  if (!data.channelMean.empty()) {
    p.mean.assign(data.channelMean.begin(), data.channelMean.end());
    p.std.assign(data.channelStd.begin(), data.channelStd.end());
    return p;
  }
  const std::size_t plane =
      static_cast<std::size_t>(train.rows()) * static_cast<std::size_t>(train.cols());
  ChannelStats stats = channel_stats(train.pixels(), train.channels(), plane);
  p.mean = std::move(stats.mean);
  p.std = std::move(stats.std);
  return p;
}

std::string training_source(const DataConfig& data) {
  return split_source(data, CifarSplit::kTrain);
}

std::string test_source(const DataConfig& data) {
  return split_source(data, CifarSplit::kTest);
}

Dataset load_images_file(const std::string& path, DataFormat format, const DataConfig& data) {
  if (format != DataFormat::kIdx)
    return cifar_dataset(read_cifar_file(path, cifar_source(data, format)), data.numClasses);
  IdxImages images = read_idx_images(path);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(images.count), 0);
  return Dataset(images.rows, images.cols, std::move(images.pixels), std::move(labels),
                 data.numClasses);
}

}  // namespace dl
