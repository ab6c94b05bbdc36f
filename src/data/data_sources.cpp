#include "data/data_sources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "data/data_format.hpp"
#include "data/validation_split.hpp"

namespace dl {
namespace {

struct FeatureStats {
  float mean = 0.0f, std = 1.0f;
};

// The mean and (population) standard deviation of every feature value, summed in order in double;
// a constant set gets std 1 (nothing to scale).
FeatureStats feature_stats(const std::vector<float>& values) {
  if (values.empty()) return {};
  double sum = 0.0;
  for (const float v : values) sum += v;
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0.0;
  for (const float v : values) squares += (v - mean) * (v - mean);
  const double std = std::sqrt(squares / static_cast<double>(values.size()));
  return {static_cast<float>(mean), std > 0.0 ? static_cast<float>(std) : 1.0f};
}

}  // namespace

Dataset load_training_set(const Config& config) {
  return data_format(config.data.format).load(config, DataSplit::kTrain);
}

Dataset load_test_set(const Config& config) {
  return data_format(config.data.format).load(config, DataSplit::kTest);
}

TrainingData load_training_data(const Config& config) {
  const DataConfig& data = config.data;
  Dataset all = load_training_set(config);
  std::optional<Dataset> validation = data_format(data.format).load_validation(config);
  if (validation) return {std::move(all), std::move(validation)};
  if (data.validationSplit <= 0.0) return {std::move(all), std::nullopt};
  TrainValidation parts =
      split_for_validation(all, data.validationSplit, config.seed, training_source(data));
  return {std::move(parts.train), std::move(parts.validation)};
}

std::string validation_source(const DataConfig& data) {
  const std::optional<std::string> path = data_format(data.format).validation_path(data);
  if (path) return *path;
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
  if (train.has_features()) {
    const FeatureStats stats = feature_stats(train.features());
    p.mean = {stats.mean};
    p.std = {stats.std};
    return p;
  }
  ChannelStats stats = train.channel_stats();
  p.mean = std::move(stats.mean);
  p.std = std::move(stats.std);
  return p;
}

std::vector<std::string> class_table(const Dataset& set) {
  const std::vector<std::string>& names = set.origin().class_names;
  std::vector<std::int64_t> counts(names.size(), 0);
  for (const std::int32_t label : set.labels())
    if (static_cast<std::size_t>(label) < counts.size()) ++counts[static_cast<std::size_t>(label)];
  std::size_t width = 0;
  for (const std::string& name : names) width = std::max(width, name.size());
  std::vector<std::string> lines;
  for (std::size_t c = 0; c < names.size(); ++c)
    lines.push_back(fmt::format("  {:>3}  {:<{}}  {}", c, names[c], width, counts[c]));
  return lines;
}

std::vector<std::string> origin_notes(const Dataset& set, const std::string& source) {
  const DataOrigin& origin = set.origin();
  std::vector<std::string> lines;
  if (!origin.image_sizes.empty()) {
    std::vector<std::string> sizes;
    for (const auto& [size, count] : origin.image_sizes)
      sizes.push_back(fmt::format("{} ({})", size, count));
    lines.push_back(fmt::format("images in {}: {}", source, fmt::join(sizes, ", ")));
  }
  // A streamed folder: say why, and how it is read.
  if (set.streamed()) lines.push_back(fmt::format("images in {}: {}", source, origin.holding));
  for (std::string& line : skipped_notes(origin, source)) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> skipped_notes(const DataOrigin& origin, const std::string& source,
                                       const std::string& count_end) {
  std::vector<std::string> lines;
  if (origin.skipped.empty()) return lines;
  lines.push_back(fmt::format("skipped {} in {} (data.onBadFile: skip){}", origin.skipped.size(),
                              source, count_end));
  for (const std::string& skipped : origin.skipped) lines.push_back("  skipped " + skipped);
  return lines;
}

std::string reading_note_lines(const std::vector<const Dataset*>& sets) {
  std::vector<std::string> notes;
  for (const Dataset* set : sets)
    for (const std::string& note : set->origin().notes)
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  std::string lines;
  for (const std::string& note : notes) lines += "dl-train: note: " + note + "\n";
  return lines;
}

std::string training_source(const DataConfig& data) {
  return data_format(data.format).source(data, DataSplit::kTrain);
}

std::string test_source(const DataConfig& data) {
  return data_format(data.format).source(data, DataSplit::kTest);
}

std::vector<std::string> data_input_paths(const DataConfig& data) {
  // The format's own sources first: a message names the first input a path holds, and
  // "it holds the input data/cifar-10-batches-bin" (a default no IDX run reads) misled.
  std::vector<std::string> paths{training_source(data), test_source(data), data.directory,
                                 data.trainImages,      data.trainLabels,  data.testImages,
                                 data.testLabels,       data.trainFile,    data.testFile,
                                 data.trainDirectory,   data.testDirectory};
  for (const auto* optional : {&data.validationImages, &data.validationLabels, &data.validationFile,
                               &data.validationDirectory})
    if (*optional) paths.push_back(**optional);
  if (const std::optional<std::string> path = data_format(data.format).validation_path(data))
    paths.push_back(*path);
  return paths;
}

Dataset load_images_file(const std::string& path, DataFormat format, const Config& config,
                         const std::vector<std::string>& classes) {
  Config as_format = config;
  as_format.data.format = format;
  return data_format(format).predict.load(path, as_format, classes);
}

}  // namespace dl
