// The training and test sets a config names: IDX files (data.trainImages ... data.testLabels) or
// the CIFAR-10 / CIFAR-100 batches in data.directory, chosen by data.format. The trainer, `eval`
// and `predict` load data only through here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.hpp"
#include "data/dataset.hpp"

namespace dl {

Dataset load_training_set(const DataConfig& data);

// The training set for training: with data.validationSplit, the part of load_training_set not
// held back (data/validation_split.hpp), and the part held back as the validation set; with
// data.validationImages/validationLabels (IDX) or data.validationFile (one CIFAR batch file), the
// whole training set and those files; else no validation set.
struct TrainingData {
  Dataset train;
  std::optional<Dataset> validation;
};
TrainingData load_training_data(const DataConfig& data, std::uint64_t seed);
// The validation set's file (data.validationFile as a path: a bare file name in data.directory),
// or the split's description.
std::string validation_source(const DataConfig& data);

// The input pipeline data.normalize, channelMean/channelStd, randomCrop and horizontalFlip ask
// for (data/input_pipeline.hpp), its draws keyed by `seed`; without given statistics the
// normalization's are computed from `train`.
InputPipeline input_pipeline(const DataConfig& data, std::uint64_t seed, const Dataset& train);

// The metadata key of model and checkpoint files holding the normalization a run used.
inline constexpr const char* kInputNormalizationKey = "input_normalization";
Dataset load_test_set(const DataConfig& data);

// Where a split comes from, for messages: the images file, or "DIR/data_batch_*.bin".
std::string training_source(const DataConfig& data);
std::string test_source(const DataConfig& data);

// The images of one file (`predict --input`): an IDX images file (plain or .gz; it holds no
// labels, so every label is 0) or one CIFAR batch file of `format` (with its labels; CIFAR-100's
// label set is data.cifar100Labels).
Dataset load_images_file(const std::string& path, DataFormat format, const DataConfig& data);

}  // namespace dl
