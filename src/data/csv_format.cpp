// data.format: csv, numeric features with a label column (csv_reader.hpp): a training file and a
// test file; validation by validationSplit. A row's features feed a feedForward input, or a
// convolutionalFlat one as channel planes of rows of pixels in order (Kaggle's MNIST CSV: the
// label, then 784 pixels of one 28x28 image).
#include <fmt/format.h>

#include <string_view>

#include "config/config_limits.hpp"
#include "core/message_text.hpp"
#include "data/csv_reader.hpp"
#include "data/data_format.hpp"

namespace dl {
namespace {

// A row's features besides its label: the input's values (channels x height x width for images).
std::int64_t features_per_row(const InputTypeConfig& input) {
  if (input.kind == InputTypeConfig::Kind::kFeedForward) return input.size;
  return std::int64_t{input.channels} * input.height * input.width;
}

std::string features_source(const InputTypeConfig& input) {
  if (input.kind == InputTypeConfig::Kind::kFeedForward)
    return fmt::format("inputType's feedForward size {}", input.size);
  return fmt::format("inputType's convolutionalFlat {}x{}x{} ({} values)", input.height,
                     input.width, input.channels, features_per_row(input));
}

CsvRequest csv_request(const Config& config, const std::string& path, std::int64_t limit) {
  const DataConfig& data = config.data;
  CsvRequest request;
  request.path = path;
  request.skip_lines = data.skipLines;
  request.delimiter = data.delimiter.front();
  request.label_index = data.labelIndex;
  request.features = static_cast<int>(features_per_row(config.inputType));
  request.features_source = features_source(config.inputType);
  request.num_classes = data.numClasses;
  request.on_bad_row = data.onBadFile;
  request.limit = limit;
  return request;
}

CsvRequest training_request(const Config& config) {
  return csv_request(config, config.data.trainFile, config.data.trainLimit);
}

// The test file has the training file's classes (its labels are looked up among them); the
// training file is read again for them, its labels alone, as an image folder's test set lists the
// training folder.
Dataset load_csv_split(const Config& config, DataSplit split) {
  const DataConfig& data = config.data;
  if (split == DataSplit::kTrain) return read_csv(training_request(config));
  CsvRequest request = csv_request(config, data.testFile, data.testLimit);
  request.name_lines = true;  // for eval --predictions
  request.classes = read_csv_classes(training_request(config));
  request.classes_source = "the training file " + data.trainFile;
  return read_csv(request);
}

std::string csv_source(const DataConfig& data, DataSplit split) {
  return split == DataSplit::kTrain ? data.trainFile : data.testFile;
}

std::optional<Dataset> no_validation_file(const Config&) {
  return std::nullopt;
}

std::optional<std::string> no_validation_path(const DataConfig&) {
  return std::nullopt;
}

// `predict --input`: a file laid out as the training file, its labels read with the model's
// classes, each row's line named for predict's rows.
Dataset load_csv_input(const std::string& path, const Config& config,
                       const std::vector<std::string>& classes) {
  CsvRequest request = csv_request(config, path, 0);
  request.classes = classes;
  request.classes_source = "the model";
  request.name_lines = true;
  return read_csv(request);
}

// The delimiter is read as any text, a tab included (tab-separated files): text_field refuses
// control characters, which are wrong in paths and names; check_csv judges the delimiter.
Field<DataConfig> delimiter_field() {
  Field<DataConfig> field = text_field("delimiter", &DataConfig::delimiter);
  field.read = [](ReadContext& ctx, const std::string& path, const YAML::Node& node,
                  DataConfig& data) { data.delimiter = scalar_text(ctx, path, node, "a string"); };
  return field;
}

// Rows of numbers feed the input as its values, at most config_limits::kMaxFeatureSize of them; no
// crops or flips (they move pixels of an image); one delimiter character; the label's field within
// the row; no resident copy (the samples are floats, not pixels).
void check_csv(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  const std::int64_t features = features_per_row(config.inputType);
  if (features > config_limits::kMaxFeatureSize)
    fail_at(ctx.remembered("inputType"),
            fmt::format("{} per CSV row: more fields than a row of data.format csv may hold ({})",
                        features_source(config.inputType), config_limits::kMaxFeatureSize),
            "check inputType's height, width and channels against the file's columns");
  if (data.randomCrop > 0 || data.horizontalFlip)
    fail_at(ctx.remembered(data.randomCrop > 0 ? "data.randomCrop" : "data.horizontalFlip"),
            "data.format csv holds rows of numbers, and random crops and flips are made on the "
            "pixels of image formats (idx, cifar10, cifar100, imagefolder)",
            "set randomCrop: 0 and horizontalFlip: false");
  // One byte, which the reader splits at: a character of a number or the quote would cut every
  // row inside its values (a data error on line 1 for what is a config mistake), a non-ASCII one
  // is several bytes.
  constexpr std::string_view kNumberOrQuote = "0123456789.+-eE\"";
  const char* const delimiter_fix = "write delimiter: \",\" (or \";\", \"\\t\", \" \")";
  // YAML reads \t as a tab only in double quotes: '\t' and an unquoted --set value are the two
  // characters, which the size check below would call "'\t' (2 bytes)", looking like a tab.
  if (data.delimiter == "\\t")
    fail_at(ctx.remembered("data.delimiter"),
            "data.delimiter is a backslash and a 't', which YAML reads as a tab only in double "
            "quotes",
            "write delimiter: \"\\t\" (on the command line: --set 'data.delimiter=\"\\t\"')");
  if (data.delimiter.size() != 1)
    fail_at(ctx.remembered("data.delimiter"),
            fmt::format("data.delimiter is '{}' ({} bytes), but it must be one ASCII character",
                        quoted_value(data.delimiter), data.delimiter.size()),
            delimiter_fix);
  if (kNumberOrQuote.find(data.delimiter.front()) != std::string_view::npos)
    fail_at(ctx.remembered("data.delimiter"),
            fmt::format("data.delimiter is '{}', a character numbers or quoted fields are written "
                        "with, so every row would split inside its values",
                        data.delimiter),
            delimiter_fix);
  // A line end or a NUL would cut rows apart or end the text early; the tab is the one control
  // character files are separated with.
  const unsigned char byte = static_cast<unsigned char>(data.delimiter.front());
  if (byte != '\t' && (byte < 0x20 || byte == 0x7f))
    fail_at(
        ctx.remembered("data.delimiter"),
        fmt::format("data.delimiter is the control character '{}'", quoted_value(data.delimiter)),
        delimiter_fix);
  if (data.labelIndex >= features + 1)
    fail_at(ctx.remembered("data.labelIndex"),
            fmt::format("data.labelIndex {} is past the last field: a row holds {} and the "
                        "label, fields 0 to {}",
                        data.labelIndex, features_source(config.inputType), features),
            "count the label's field from 0, or write -1 for the last field");
  if (data.deviceResident == DeviceResidency::kAlways)
    fail_at(ctx.remembered("data.deviceResident"),
            "data.deviceResident: always uploads pixels, but data.format csv holds numbers",
            "set deviceResident: auto or never");
}

}  // namespace

DataFormatKind csv_data_format() {
  return {DataFormat::kCsv,
          "csv",
          {
              text_field("trainFile", &DataConfig::trainFile),
              text_field("testFile", &DataConfig::testFile),
              integer_field("skipLines", &DataConfig::skipLines, 0),
              delimiter_field(),
              integer_field("labelIndex", &DataConfig::labelIndex, -1),
              enum_field("onBadFile", &DataConfig::onBadFile),
          },
          check_csv,
          one_channel,
          load_csv_split,
          csv_source,
          no_validation_file,
          no_validation_path,
          {"a CSV file laid out as the training file (its label column included)", load_csv_input,
           true}};
}

}  // namespace dl
