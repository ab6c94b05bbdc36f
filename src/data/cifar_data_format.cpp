// data.format: cifar10 and cifar100, the binary batches in data.directory (cifar_reader.hpp),
// 3 x 32 x 32 colour images; a validation set may be one more batch file (data.validationFile).
#include <fmt/format.h>

#include <filesystem>
#include <utility>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "data/cifar_format.hpp"
#include "data/cifar_reader.hpp"
#include "data/data_format.hpp"

namespace dl {
namespace {

CifarSource cifar_source(const DataConfig& data) {
  CifarSource source;
  source.directory = data.directory;
  source.cifar100 = data.format == DataFormat::kCifar100;
  source.coarse_labels = data.cifar100Labels == Cifar100Labels::kCoarse;
  return source;
}

CifarSplit cifar_split(DataSplit split) {
  return split == DataSplit::kTrain ? CifarSplit::kTrain : CifarSplit::kTest;
}

Dataset cifar_dataset(CifarRecords records, int num_classes) {
  return Dataset(cifar::kChannels, cifar::kSide, cifar::kSide, std::move(records.pixels),
                 std::move(records.labels), num_classes);
}

Dataset load_cifar_split(const Config& config, DataSplit split) {
  const DataConfig& data = config.data;
  const std::int64_t limit = split == DataSplit::kTrain ? data.trainLimit : data.testLimit;
  return cifar_dataset(read_cifar_split(cifar_source(data), cifar_split(split), limit),
                       data.numClasses);
}

std::string cifar_split_source(const DataConfig& data, DataSplit split) {
  const std::vector<std::string> files = cifar_split_files(cifar_source(data), cifar_split(split));
  if (files.size() == 1) return files.front();
  // data_batch_1.bin ... data_batch_5.bin: "DIR/data_batch_*.bin"
  const std::filesystem::path first(files.front());
  const std::string name = first.filename().string();
  return (first.parent_path() / (name.substr(0, name.find_last_of('_') + 1) + "*.bin")).string();
}

// data.validationFile as a path: a bare file name is read in data.directory.
std::optional<std::string> cifar_validation_path(const DataConfig& data) {
  if (!data.validationFile) return std::nullopt;
  const std::string& file = *data.validationFile;
  if (file.find('/') != std::string::npos) return file;
  return (std::filesystem::path(data.directory) / file).string();
}

// data.validationFile: one batch file of the format, named in the message when it is missing.
std::optional<Dataset> load_cifar_validation(const Config& config) {
  const DataConfig& data = config.data;
  const std::optional<std::string> path = cifar_validation_path(data);
  if (!path) return std::nullopt;
  const CifarSource source = cifar_source(data);
  std::error_code error;
  if (!std::filesystem::is_regular_file(*path, error)) {
    throw DataError(fmt::format(
        "{}: {}; data.validationFile names one {} batch file (a bare name such as test_batch.bin "
        "is read in data.directory, {}): fix the name, or run scripts/fetch_cifar10.sh",
        *path, std::filesystem::exists(*path, error) ? "is not a regular file" : "missing",
        cifar_name(source), data.directory));
  }
  return cifar_dataset(read_cifar_file(*path, source), data.numClasses);
}

Dataset load_cifar_file(const std::string& path, const Config& config,
                        const std::vector<std::string>& /*classes*/) {
  return cifar_dataset(read_cifar_file(path, cifar_source(config.data)), config.data.numClasses);
}

int cifar_classes(const DataConfig& data) {
  if (data.format == DataFormat::kCifar10) return cifar::kCifar10Classes;
  return data.cifar100Labels == Cifar100Labels::kCoarse ? cifar::kCifar100CoarseClasses
                                                        : cifar::kCifar100FineClasses;
}

bool input_fits_cifar(const InputTypeConfig& in) {
  if (in.kind == InputTypeConfig::Kind::kFeedForward)
    return static_cast<std::size_t>(in.size) == cifar::kImageBytes;
  return in.channels == cifar::kChannels && in.height == cifar::kSide && in.width == cifar::kSide;
}

// One validation source; the class count and the input shape the batches give.
void check_cifar(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  check_single_validation_source(ctx, data, data.validationFile.has_value(), "validationFile",
                                 "validationFile");
  const int classes = cifar_classes(data);
  const bool cifar100 = data.format == DataFormat::kCifar100;
  const std::string what =
      cifar100 ? fmt::format("CIFAR-100 with cifar100Labels: {}", enum_name(data.cifar100Labels))
               : std::string("CIFAR-10");
  if (data.numClasses != classes)
    fail_at(
        ctx.remembered({"data.numClasses", "data.cifar100Labels", "data.format"}),
        fmt::format("data.numClasses is {} but {} has {} classes", data.numClasses, what, classes),
        fmt::format("set data.numClasses: {}", classes));
  if (!input_fits_cifar(config.inputType))
    fail_at(ctx.remembered("inputType"),
            fmt::format("data.format {} gives 3 x 32 x 32 colour images, which inputType does "
                        "not describe",
                        cifar100 ? "cifar100" : "cifar10"),
            fmt::format("write inputType: {{convolutionalFlat: {{height: {}, width: {}, "
                        "channels: {}}}}}",
                        cifar::kSide, cifar::kSide, cifar::kChannels));
}

constexpr std::string_view kPredictHelp = "one CIFAR batch file (with its labels)";

// The two CIFAR sets differ only in their name and cifar100's choice of label set.
DataFormatKind cifar_data_format(DataFormat format, const char* name, FieldTable<DataConfig> keys) {
  return {format,
          name,
          std::move(keys),
          check_cifar,
          [](const Config& /*config*/) { return cifar::kChannels; },
          load_cifar_split,
          cifar_split_source,
          load_cifar_validation,
          cifar_validation_path,
          {kPredictHelp, load_cifar_file, true}};
}

}  // namespace

DataFormatKind cifar10_data_format() {
  return cifar_data_format(DataFormat::kCifar10, "cifar10",
                           {text_field("directory", &DataConfig::directory),
                            optional_text_field("validationFile", &DataConfig::validationFile)});
}

DataFormatKind cifar100_data_format() {
  return cifar_data_format(DataFormat::kCifar100, "cifar100",
                           {text_field("directory", &DataConfig::directory),
                            enum_field("cifar100Labels", &DataConfig::cifar100Labels),
                            optional_text_field("validationFile", &DataConfig::validationFile)});
}

}  // namespace dl
