// data.format: idx, the MNIST / Fashion-MNIST files (idx_reader.hpp): an images file and a
// labels file per split, and optionally a pair for the validation set.
#include <fmt/format.h>

#include <utility>

#include "data/data_format.hpp"
#include "data/idx_reader.hpp"

namespace dl {
namespace {

Dataset load_idx_split(const Config& config, DataSplit split) {
  const DataConfig& data = config.data;
  if (split == DataSplit::kTrain)
    return Dataset::load_idx(data.trainImages, data.trainLabels, data.numClasses, data.trainLimit);
  return Dataset::load_idx(data.testImages, data.testLabels, data.numClasses, data.testLimit);
}

std::string idx_source(const DataConfig& data, DataSplit split) {
  return split == DataSplit::kTrain ? data.trainImages : data.testImages;
}

std::optional<Dataset> load_idx_validation(const Config& config) {
  const DataConfig& data = config.data;
  if (!data.validationImages) return std::nullopt;
  return Dataset::load_idx(*data.validationImages, *data.validationLabels, data.numClasses);
}

std::optional<std::string> idx_validation_path(const DataConfig& data) {
  return data.validationImages;
}

// An images file holds no labels: every label is 0.
Dataset load_idx_images(const std::string& path, const Config& config,
                        const std::vector<std::string>& /*classes*/) {
  IdxImages images = read_idx_images(path);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(images.count), 0);
  return Dataset(images.rows, images.cols, std::move(images.pixels), std::move(labels),
                 config.data.numClasses);
}

// Separate validation files come in pairs and exclude validationSplit.
void check_idx(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  const bool images = data.validationImages.has_value();
  if (images != data.validationLabels.has_value())
    fail_at(ctx.remembered(images ? "data.validationImages" : "data.validationLabels"),
            fmt::format("data.{} is set but data.{} is not",
                        images ? "validationImages" : "validationLabels",
                        images ? "validationLabels" : "validationImages"),
            "give both validation files (images and labels), or neither");
  check_single_validation_source(ctx, data, images, "validationImages",
                                 "validationImages and validationLabels");
}

}  // namespace

DataFormatKind idx_data_format() {
  return {DataFormat::kIdx,
          "idx",
          {
              text_field("trainImages", &DataConfig::trainImages),
              text_field("trainLabels", &DataConfig::trainLabels),
              text_field("testImages", &DataConfig::testImages),
              text_field("testLabels", &DataConfig::testLabels),
              optional_text_field("validationImages", &DataConfig::validationImages),
              optional_text_field("validationLabels", &DataConfig::validationLabels),
          },
          check_idx,
          one_channel,
          load_idx_split,
          idx_source,
          load_idx_validation,
          idx_validation_path,
          {"an IDX images file (plain or .gz; it holds no labels)", load_idx_images, false}};
}

}  // namespace dl
