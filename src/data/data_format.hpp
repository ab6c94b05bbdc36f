// The data format registry: each value of data.format declared once, beside its reader, as the
// layer kinds are (nn/layer_registry.hpp), with
//   - its name (data.format's spelling),
//   - its own keys in the data section (a table of the schema's Fields; their defaults are
//     DataConfig's), read and dumped only when data.format names it,
//   - its checks of the loaded config (class count, inputType, validation sources),
//   - its readers: the training and test sets, its own validation source, where each comes from,
//   - what `predict --input` reads for it.
// The config schema (src/config/config_schema.cpp) reads the format keys from here and the
// config loader runs the checks, so this library is built below the schema (docs/ARCHITECTURE.md);
// the trainer, `validate`, `eval` and `predict` load data through data_sources.hpp, which calls
// the readers. The list of formats is data_format.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/read_context.hpp"
#include "config/schema_field.hpp"
#include "data/dataset.hpp"

namespace dl {

enum class DataSplit { kTrain, kTest };

// `predict --input` for a format: what the file is, and how it is read.
struct PredictInput {
  std::string_view help;  // "an IDX images file (plain or .gz)"
  // The samples of `path`, with the file's labels where it has them, for a network of
  // config.inputType trained on `classes` (the model's class names; empty: its classes are
  // numbers), which a file that labels samples by name is read against.
  Dataset (*load)(const std::string& path, const Config& config,
                  const std::vector<std::string>& classes);
  bool labelled;  // whether the labels are the file's own (else every label is 0)
};

struct DataFormatKind {
  DataFormat format;
  std::string_view name;
  FieldTable<DataConfig> keys;  // in dump order, after data.format
  // Checks of a loaded config that concern this format; reports through fail_at.
  void (*check)(const ReadContext& ctx, const Config& config);
  // The channel planes of one sample as the readers give them, whatever inputType says (CIFAR
  // read as feedForward: 3): data.channelMean and channelStd hold one value for each.
  int (*channels)(const Config& config);
  // Readers get the whole config: image formats fit their images to inputType.
  Dataset (*load)(const Config& config, DataSplit split);
  // Where a split comes from, for messages: a file, a folder, or "DIR/data_batch_*.bin".
  std::string (*source)(const DataConfig& data, DataSplit split);
  // The format's own validation set (files or a folder named by its keys), or nothing when the
  // config names none; `validation_path` names it.
  std::optional<Dataset> (*load_validation)(const Config& config);
  std::optional<std::string> (*validation_path)(const DataConfig& data);
  PredictInput predict;
};

// Every format, in the order the documentation lists them.
const std::vector<DataFormatKind>& data_formats();
const DataFormatKind& data_format(DataFormat format);
// The format spelled `name` (any letter case), or null.
const DataFormatKind* find_data_format(std::string_view name);
std::vector<std::string> data_format_names();
// The formats whose keys include `key` (for "data.directory is a key of cifar10, cifar100").
std::vector<std::string> formats_with_key(std::string_view key);

// channels for a format whose samples are one plane: IDX's grey images, CSV's features.
int one_channel(const Config& config);

// A format's own validation source (its key `key`, set when `given`) excludes
// data.validationSplit; the fix says to remove `remove`. Shared by the formats' checks.
void check_single_validation_source(const ReadContext& ctx, const DataConfig& data, bool given,
                                    const std::string& key, const std::string& remove);

// The declarations, one per format, beside each reader.
DataFormatKind idx_data_format();
DataFormatKind cifar10_data_format();
DataFormatKind cifar100_data_format();
DataFormatKind image_folder_data_format();
DataFormatKind csv_data_format();

}  // namespace dl
