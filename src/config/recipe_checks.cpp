#include "config/recipe_checks.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "config/enum_names.hpp"
#include "data/cifar_format.hpp"

namespace dl {
namespace {

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

// A CIFAR validation batch file: CIFAR formats only, one validation source.
void check_validation_file(const ReadContext& ctx, const DataConfig& data) {
  if (!data.validationFile) return;
  if (data.format == DataFormat::kIdx)
    fail_at(ctx.remembered("data.validationFile"),
            "data.validationFile names a CIFAR batch file, but data.format is idx",
            "give IDX validation files as data.validationImages and data.validationLabels");
  if (data.validationSplit > 0.0)
    fail_at(ctx.remembered("data.validationSplit"),
            "data.validationSplit and data.validationFile both name a validation set",
            "keep one: validationSplit: 0, or remove validationFile");
}

// Separate validation files come in pairs, are IDX files, and exclude validationSplit.
void check_validation_source(const ReadContext& ctx, const DataConfig& data) {
  check_validation_file(ctx, data);
  const bool images = data.validationImages.has_value();
  if (images != data.validationLabels.has_value())
    fail_at(ctx.remembered(images ? "data.validationImages" : "data.validationLabels"),
            fmt::format("data.{} is set but data.{} is not",
                        images ? "validationImages" : "validationLabels",
                        images ? "validationLabels" : "validationImages"),
            "give both validation files (images and labels), or neither");
  if (!images) return;
  if (data.validationSplit > 0.0)
    fail_at(ctx.remembered("data.validationSplit"),
            "data.validationSplit and data.validationImages both name a validation set",
            "keep one: validationSplit: 0, or remove validationImages and validationLabels");
  if (data.format != DataFormat::kIdx)
    fail_at(ctx.remembered("data.validationImages"),
            fmt::format("data.validationImages is read for format idx only, not {}",
                        enum_name(data.format)),
            "name a CIFAR batch file as data.validationFile (e.g. test_batch.bin), or hold back "
            "part of the training batches with data.validationSplit (e.g. 0.1)");
}

// Normalization lists need normalize and one value per channel; crops and flips need images.
void check_input_pipeline(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  const bool image = config.inputType.kind == InputTypeConfig::Kind::kConvolutionalFlat;
  const int channels = image ? config.inputType.channels : 1;
  for (const auto& [key, list] :
       {std::pair{"channelMean", &data.channelMean}, std::pair{"channelStd", &data.channelStd}}) {
    if (list->empty()) continue;
    const std::string path = std::string("data.") + key;
    if (!data.normalize)
      fail_at(ctx.remembered(path), path + " is given but data.normalize is false",
              "set data.normalize: true, or remove " + path);
    if (static_cast<int>(list->size()) != channels)
      fail_at(ctx.remembered(path),
              fmt::format("{} has {} values but the input has {} channel(s)", path, list->size(),
                          channels),
              "give one value per channel");
  }
  if (data.channelMean.empty() != data.channelStd.empty())
    fail_at(ctx.remembered(data.channelMean.empty() ? "data.channelStd" : "data.channelMean"),
            "data.channelMean and data.channelStd come together",
            "give both, or neither to compute them from the training set");
  if (!image && (data.randomCrop > 0 || data.horizontalFlip))
    fail_at(ctx.remembered(data.randomCrop > 0 ? "data.randomCrop" : "data.horizontalFlip"),
            "random crops and flips need image input",
            "use inputType: convolutionalFlat, or set randomCrop: 0 and horizontalFlip: false");
}

}  // namespace

void check_data_source(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  check_validation_source(ctx, data);
  check_input_pipeline(ctx, config);
  if (data.format == DataFormat::kIdx) return;
  const int classes = cifar_classes(data);
  const std::string what =
      data.format == DataFormat::kCifar100
          ? fmt::format("CIFAR-100 with cifar100Labels: {}", enum_name(data.cifar100Labels))
          : std::string("CIFAR-10");
  if (data.numClasses != classes)
    fail_at(
        ctx.remembered("data.numClasses"),
        fmt::format("data.numClasses is {} but {} has {} classes", data.numClasses, what, classes),
        fmt::format("set data.numClasses: {}", classes));
  if (!input_fits_cifar(config.inputType))
    fail_at(ctx.remembered("inputType"),
            fmt::format("data.format {} gives 3 x 32 x 32 colour images, which inputType does "
                        "not describe",
                        enum_name(data.format)),
            fmt::format("write inputType: {{convolutionalFlat: {{height: {}, width: {}, "
                        "channels: {}}}}}",
                        cifar::kSide, cifar::kSide, cifar::kChannels));
}

void check_schedule(const ReadContext& ctx, const Config& config) {
  const ScheduleConfig& s = config.schedule;
  if (s.totalIterations > 0 && s.warmupIterations >= s.totalIterations)
    fail_at(ctx.remembered("learningRateSchedule.warmupIterations"),
            fmt::format("learningRateSchedule.warmupIterations ({}) is not below totalIterations "
                        "({})",
                        s.warmupIterations, s.totalIterations),
            "shorten the warm-up or lengthen totalIterations");
  if (s.type == LearningRateSchedule::kCosine &&
      s.minLearningRate >= effective_learning_rate(config.updater))
    fail_at(ctx.remembered("learningRateSchedule.minLearningRate"),
            fmt::format("learningRateSchedule.minLearningRate ({}) is not below the learning rate "
                        "({}): the cosine schedule would not decay",
                        s.minLearningRate, effective_learning_rate(config.updater)),
            "lower minLearningRate (0 anneals to zero)");
}

}  // namespace dl
