// The training and test sets a config names, read by the reader of data.format (the data format
// registry, data_format.hpp). The trainer, `validate`, `eval` and `predict` load data only
// through here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "data/dataset.hpp"

namespace dl {

Dataset load_training_set(const Config& config);

// The training set for training: with the format's own validation source (IDX's
// data.validationImages/validationLabels, CIFAR's data.validationFile, ...), the whole training
// set and that; with data.validationSplit, the part of load_training_set not held back
// (data/validation_split.hpp), and the part held back as the validation set; else no validation
// set.
struct TrainingData {
  Dataset train;
  std::optional<Dataset> validation;
};
TrainingData load_training_data(const Config& config);
// The validation set's file or folder (the format's validation_path), or the split's
// description.
std::string validation_source(const DataConfig& data);

// The input pipeline data.normalize, channelMean/channelStd, randomCrop and horizontalFlip ask
// for (data/input_pipeline.hpp), its draws keyed by `seed`; without given statistics the
// normalization's are computed from `train`.
InputPipeline input_pipeline(const DataConfig& data, std::uint64_t seed, const Dataset& train);

// The metadata key of model and checkpoint files holding the normalization a run used.
inline constexpr const char* kInputNormalizationKey = "input_normalization";
// The metadata key holding the training set's class names (image folders, CSV text labels), one
// per line in label order (a class name holds no control character: image_folder.cpp and
// csv_reader.cpp refuse one).
inline constexpr const char* kClassNamesKey = "class_names";
Dataset load_test_set(const Config& config);

// The classes of `set` when its reader named them (image folders, CSV text labels): one line per
// class, its label, name and number of samples ("  3  Dress  402"); empty otherwise.
std::vector<std::string> class_table(const Dataset& set);
// What reading `set` from `source` found besides its samples, for the log and `validate`: the
// image sizes before fitting ("images in DIR: 28x28 (4000)"), for a streamed image folder how it
// is read ("images in DIR: 90000 images streamed: ..."), and each file skipped under
// data.onBadFile: skip ("skipped PATH: why", a CSV row as "PATH: line N: why"), after a count.
std::vector<std::string> origin_notes(const Dataset& set, const std::string& source);
// Of those, the inputs left out under data.onBadFile: skip (origin_notes' last lines, and what
// `predict` prints): a count line, "skipped 2 in SOURCE (data.onBadFile: skip)" ended by
// `count_end`, then one line per input, "  skipped PATH: why"; none when nothing was left out.
std::vector<std::string> skipped_notes(const DataOrigin& origin, const std::string& source,
                                       const std::string& count_end = ":");

// The notes reading `sets` left (DataOrigin::notes), each once (one file may be two sets), as the
// lines "dl-train: note: ...\n" a command prints on standard error; empty without notes.
std::string reading_note_lines(const std::vector<const Dataset*>& sets);

// Where a split comes from, for messages: the images file, a folder, or "DIR/data_batch_*.bin".
std::string training_source(const DataConfig& data);
std::string test_source(const DataConfig& data);
// Every file or folder `data` names, whatever its format (the unused keys' defaults included):
// what --overwrite must never delete and what a command's output must never replace.
std::vector<std::string> data_input_paths(const DataConfig& data);

// The samples of `path` (`predict --input`) read as `format` says (its PredictInput): e.g. an
// IDX images file (no labels: every label is 0) or one CIFAR batch file (with its labels), for a
// model trained on `classes` (its class names; empty: numbers).
Dataset load_images_file(const std::string& path, DataFormat format, const Config& config,
                         const std::vector<std::string>& classes = {});

}  // namespace dl
