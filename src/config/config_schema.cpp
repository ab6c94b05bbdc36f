#include "config/config_schema.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "config/config_limits.hpp"
#include "config/layers_schema.hpp"
#include "core/message_text.hpp"
#include "data/data_format.hpp"

namespace dl {

namespace {

using namespace config_limits;

constexpr std::string_view kAllDevices = "all";

// ---- updater, schedule -------------------------------------------------------------------

// weightDecayBias: dumped only where it is false, so that configs without it keep their dump.
Field<UpdaterConfig> weight_decay_bias_field() {
  Field<UpdaterConfig> field = bool_field("weightDecayBias", &UpdaterConfig::weightDecayBias);
  field.omitted_when = [](const UpdaterConfig& u) { return u.weightDecayBias; };
  return field;
}

const FieldTable<UpdaterConfig>& updater_fields() {
  static const FieldTable<UpdaterConfig> table{
      enum_field("type", &UpdaterConfig::type),
      // Dumped as the effective value, so a resolved config states the rate actually used.
      {"learningRate",
       [](ReadContext& ctx, const std::string& path, const YAML::Node& node, UpdaterConfig& u) {
         u.learningRate = read_real(ctx, path, node, RealRange::above(0.0));
       },
       [](YAML::Emitter& out, const UpdaterConfig& u) {
         write_real(out, effective_learning_rate(u));
       }},
      real_field("momentum", &UpdaterConfig::momentum, RealRange::from_below(0.0, 1.0)),
      real_field("beta1", &UpdaterConfig::beta1, RealRange::from_below(0.0, 1.0)),
      real_field("beta2", &UpdaterConfig::beta2, RealRange::from_below(0.0, 1.0)),
      real_field("epsilon", &UpdaterConfig::epsilon, RealRange::above(0.0)),
      real_field("rmsDecay", &UpdaterConfig::rmsDecay, RealRange::from_below(0.0, 1.0)),
      real_field("weightDecay", &UpdaterConfig::weightDecay, RealRange::at_least(0.0)),
      weight_decay_bias_field(),
  };
  return table;
}

const FieldTable<ScheduleConfig>& schedule_fields() {
  static const FieldTable<ScheduleConfig> table{
      enum_field("type", &ScheduleConfig::type),
      real_field("gamma", &ScheduleConfig::gamma, RealRange::above(0.0)),
      real_field("power", &ScheduleConfig::power, RealRange::above(0.0)),
      integer_field("step", &ScheduleConfig::step, 1),
      integer_field("warmupIterations", &ScheduleConfig::warmupIterations, 0),
      integer_field("totalIterations", &ScheduleConfig::totalIterations, 0),
      real_field("minLearningRate", &ScheduleConfig::minLearningRate, RealRange::at_least(0.0)),
      real_field("divFactor", &ScheduleConfig::divFactor, RealRange::at_least(1.0)),
      real_field("finalDivFactor", &ScheduleConfig::finalDivFactor, RealRange::at_least(1.0)),
  };
  return table;
}

// ---- inputType ---------------------------------------------------------------------------

const FieldTable<InputTypeConfig>& convolutional_flat_fields() {
  static const FieldTable<InputTypeConfig> table{
      integer_field("height", &InputTypeConfig::height, 1, kMaxSpatialExtent),
      integer_field("width", &InputTypeConfig::width, 1, kMaxSpatialExtent),
      integer_field("channels", &InputTypeConfig::channels, 1, kMaxLayerWidth),
  };
  return table;
}

const FieldTable<InputTypeConfig>& feed_forward_fields() {
  static const FieldTable<InputTypeConfig> table{
      integer_field("size", &InputTypeConfig::size, 1, kMaxFeatureSize),
  };
  return table;
}

Field<InputTypeConfig> input_kind_field(const char* key, InputTypeConfig::Kind kind,
                                        const FieldTable<InputTypeConfig>& (*table)()) {
  Field<InputTypeConfig> field{
      key,
      [kind, table](ReadContext& ctx, const std::string& path, const YAML::Node& node,
                    InputTypeConfig& t) {
        t.kind = kind;
        read_fields(ctx, path, node, table(), t);
      },
      [table](YAML::Emitter& out, const InputTypeConfig& t) { write_fields(out, table(), t); }};
  field.nested_keys = [table] { return key_paths(table()); };
  return field;
}

const FieldTable<InputTypeConfig>& input_kinds() {
  static const FieldTable<InputTypeConfig> table{
      input_kind_field("convolutionalFlat", InputTypeConfig::Kind::kConvolutionalFlat,
                       convolutional_flat_fields),
      input_kind_field("feedForward", InputTypeConfig::Kind::kFeedForward, feed_forward_fields),
  };
  return table;
}

const std::string kInputTypeExample =
    "write inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}} or "
    "inputType: {feedForward: {size: 784}}";

Field<Config> input_type_field() {
  Field<Config> field{
      "inputType",
      [](ReadContext& ctx, const std::string& path, const YAML::Node& node, Config& c) {
        if (node.IsNull()) ctx.fail(path, node, "inputType has no value", kInputTypeExample);
        read_fields(ctx, path, node, input_kinds(), c.inputType);
        if (node.size() != 1)
          ctx.fail(path, node,
                   fmt::format("inputType must have exactly one of convolutionalFlat or "
                               "feedForward, got {}",
                               node.size() == 0 ? "none" : "both"),
                   kInputTypeExample);
      },
      [](YAML::Emitter& out, const Config& c) {
        const auto& kinds = input_kinds();
        const auto& kind =
            kinds[c.inputType.kind == InputTypeConfig::Kind::kConvolutionalFlat ? 0 : 1];
        out << YAML::BeginMap << YAML::Key << kind.key << YAML::Value;
        kind.write(out, c.inputType);
        out << YAML::EndMap;
      }};
  field.required_fix = kInputTypeExample;
  field.nested_keys = [] { return key_paths(input_kinds()); };
  return field;
}

// ---- data, output, parallel, memory, cuda, earlyStopping --------------------------------

// data.format: a name from the data format registry (data/data_format.hpp).
Field<DataConfig> data_format_field() {
  return {"format",
          [](ReadContext& ctx, const std::string& path, const YAML::Node& node, DataConfig& d) {
            const std::string text = node.IsScalar() ? node.Scalar() : describe_node(node);
            const DataFormatKind* kind = find_data_format(text);
            if (kind == nullptr)
              fail_unknown_name(ctx, path, node, "data format", text, "for " + path,
                                data_format_names());
            d.format = kind->format;
          },
          [](YAML::Emitter& out, const DataConfig& d) {
            out << std::string(data_format(d.format).name);
          }};
}

// The keys every format has, after the format's own.
const FieldTable<DataConfig>& common_data_fields() {
  static const FieldTable<DataConfig> table{
      bool_field("shuffle", &DataConfig::shuffle),
      integer_field("trainLimit", &DataConfig::trainLimit, 0),
      integer_field("testLimit", &DataConfig::testLimit, 0),
      real_field("validationSplit", &DataConfig::validationSplit, RealRange::from_below(0.0, 1.0)),
      bool_field("normalize", &DataConfig::normalize),
      real_list_field("channelMean", &DataConfig::channelMean, RealRange::any()),
      real_list_field("channelStd", &DataConfig::channelStd, RealRange::above(0.0)),
      integer_field("randomCrop", &DataConfig::randomCrop, 0, kMaxRandomCrop),
      bool_field("horizontalFlip", &DataConfig::horizontalFlip),
      integer_field("numClasses", &DataConfig::numClasses, kMinClasses, kMaxLayerWidth),
      enum_field("deviceResident", &DataConfig::deviceResident),
  };
  return table;
}

// The data section's keys for `format`: data.format, the format's keys, the common ones.
FieldTable<DataConfig> data_fields(DataFormat format) {
  FieldTable<DataConfig> table{data_format_field()};
  const FieldTable<DataConfig>& own = data_format(format).keys;
  table.insert(table.end(), own.begin(), own.end());
  table.insert(table.end(), common_data_fields().begin(), common_data_fields().end());
  return table;
}

// A key that belongs to another format: said so, rather than "unknown key".
void refuse_other_formats_keys(const ReadContext& ctx, const std::string& path,
                               const YAML::Node& node, const FieldTable<DataConfig>& table,
                               DataFormat format) {
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) continue;
    const std::string key = entry.first.Scalar();
    if (std::any_of(table.begin(), table.end(), [&](const auto& f) { return f.key == key; }))
      continue;
    const std::vector<std::string> owners = formats_with_key(key);
    if (owners.empty()) continue;
    ctx.fail(join_path(path, key), entry.first,
             fmt::format("{} is a key of data.format {}, not of {}", join_path(path, key),
                         join_words(owners), data_format(format).name),
             fmt::format("set data.format: {}, or remove {}", owners.front(), key));
  }
}

// The format is read first: it decides which keys the section has.
Field<Config> data_section_field() {
  Field<Config> field{
      "data",
      [](ReadContext& ctx, const std::string& path, const YAML::Node& node, Config& c) {
        if (node.IsMap()) {
          const YAML::Node& section = node;
          const YAML::Node format = section["format"];
          if (format) data_format_field().read(ctx, join_path(path, "format"), format, c.data);
        }
        const FieldTable<DataConfig> table = data_fields(c.data.format);
        if (node.IsMap()) refuse_other_formats_keys(ctx, path, node, table, c.data.format);
        read_fields(ctx, path, node, table, c.data);
      },
      [](YAML::Emitter& out, const Config& c) {
        write_fields(out, data_fields(c.data.format), c.data);
      }};
  // Every format's keys: a misplaced data key is named whichever format the config has.
  field.nested_keys = [] {
    std::set<std::string> keys;
    for (const DataFormatKind& kind : data_formats())
      for (const std::string& key : key_paths(data_fields(kind.format))) keys.insert(key);
    return std::vector<std::string>(keys.begin(), keys.end());
  };
  return field;
}

const FieldTable<OutputConfig>& output_fields() {
  static const FieldTable<OutputConfig> table{
      text_field("directory", &OutputConfig::directory),
      integer_field("scoreEveryIterations", &OutputConfig::scoreEveryIterations, 1),
      integer_field("checkpointEveryIterations", &OutputConfig::checkpointEveryIterations, 0),
      integer_field("keepLast", &OutputConfig::keepLast, 1),
      bool_field("printEvaluation", &OutputConfig::printEvaluation),
      enum_field("console", &OutputConfig::console),
      bool_field("report", &OutputConfig::report),
      bool_field("tensorboard", &OutputConfig::tensorboard),
  };
  return table;
}

const FieldTable<ParallelConfig>& parallel_fields() {
  static const FieldTable<ParallelConfig> table{
      enum_field("mode", &ParallelConfig::mode),
      integer_field("workers", &ParallelConfig::workers, 1, kMaxWorkers),
      integer_field("prefetchBuffer", &ParallelConfig::prefetchBuffer, 0, kMaxPrefetchBuffer),
      integer_field("averagingFrequency", &ParallelConfig::averagingFrequency, 1),
      bool_field("averageUpdaters", &ParallelConfig::averageUpdaters),
      bool_field("reportScoreAfterAveraging", &ParallelConfig::reportScoreAfterAveraging),
      integer_field("blasThreads", &ParallelConfig::blasThreads, 0, kMaxBlasThreads),
      enum_field("learningRateScaling", &ParallelConfig::learningRateScaling),
      integer_field("warmupIterations", &ParallelConfig::warmupIterations, 0),
      integer_field("timeout", &ParallelConfig::timeout, 0),
  };
  return table;
}

const FieldTable<MemoryConfig>& memory_fields() {
  static const FieldTable<MemoryConfig> table{
      byte_size_field("maximumDeviceCacheableLength", &MemoryConfig::maximumDeviceCacheableLength),
      byte_size_field("maximumDeviceCache", &MemoryConfig::maximumDeviceCache),
      byte_size_field("maximumHostCacheableLength", &MemoryConfig::maximumHostCacheableLength),
      byte_size_field("maximumHostCache", &MemoryConfig::maximumHostCache),
  };
  return table;
}

// `all` or a list of distinct device indices.
Field<CudaConfig> devices_field() {
  return {"devices",
          [](ReadContext& ctx, const std::string& path, const YAML::Node& node, CudaConfig& c) {
            const std::string fix = "write devices: all, or a list such as devices: [0, 1]";
            c.devices.clear();
            if (node.IsScalar() && equals_ignoring_case(node.Scalar(), kAllDevices)) return;
            if (!node.IsSequence())
              ctx.fail(path, node,
                       fmt::format("{} must be 'all' or a list of device indices, got {}", path,
                                   describe_node(node)),
                       fix);
            for (std::size_t i = 0; i < node.size(); ++i) {
              const std::string item_path = join_path(path, std::to_string(i));
              const int device = static_cast<int>(
                  read_integer(ctx, item_path, node[i], IntRange{0, kMaxCudaDeviceIndex}));
              if (std::find(c.devices.begin(), c.devices.end(), device) != c.devices.end())
                ctx.fail(item_path, node[i],
                         fmt::format("device {} is listed twice in {}", device, path),
                         "list each device once");
              c.devices.push_back(device);
            }
          },
          [](YAML::Emitter& out, const CudaConfig& c) {
            if (c.devices.empty()) {
              out << std::string(kAllDevices);
              return;
            }
            out << YAML::Flow << YAML::BeginSeq;
            for (int d : c.devices) out << d;
            out << YAML::EndSeq;
          }};
}

const FieldTable<CudaConfig>& cuda_fields() {
  static const FieldTable<CudaConfig> table{
      devices_field(),
      bool_field("allowMultiGPU", &CudaConfig::allowMultiGPU),
      enum_field("nccl", &CudaConfig::nccl),
      integer_field("maximumGridSize", &CudaConfig::maximumGridSize, 1),
      integer_field("maximumBlockSize", &CudaConfig::maximumBlockSize, 1, kMaxCudaBlockSize),
      bool_field("graphs", &CudaConfig::graphs),
  };
  return table;
}

const FieldTable<CpuConfig>& cpu_fields() {
  static const FieldTable<CpuConfig> table{
      enum_field("kernels", &CpuConfig::kernels),
  };
  return table;
}

const FieldTable<EarlyStoppingConfig>& early_stopping_fields() {
  static const FieldTable<EarlyStoppingConfig> table{
      bool_field("enabled", &EarlyStoppingConfig::enabled),
      integer_field("maxEpochs", &EarlyStoppingConfig::maxEpochs, 0),
      integer_field("patience", &EarlyStoppingConfig::patience, 0),
      real_field("minImprovement", &EarlyStoppingConfig::minImprovement, RealRange::at_least(0.0)),
      optional_real_field("bestScoreTarget", &EarlyStoppingConfig::bestScoreTarget),
      real_field("maxTimeSeconds", &EarlyStoppingConfig::maxTimeSeconds, RealRange::at_least(0.0)),
      optional_real_field("maxScore", &EarlyStoppingConfig::maxScore),
      bool_field("stopOnInvalidScore", &EarlyStoppingConfig::stopOnInvalidScore),
      enum_field("scoreCalculator", &EarlyStoppingConfig::scoreCalculator),
      integer_field("evaluateEveryNEpochs", &EarlyStoppingConfig::evaluateEveryNEpochs, 1),
      bool_field("saveBestModel", &EarlyStoppingConfig::saveBestModel),
  };
  return table;
}

const FieldTable<LossScalingConfig>& loss_scaling_fields() {
  static const FieldTable<LossScalingConfig> table{
      optional_enum_field("mode", &LossScalingConfig::mode),
      real_field("initialScale", &LossScalingConfig::initialScale,
                 RealRange{kMinLossScale, kMaxLossScale}),
      // Above 1 and below 1 respectively: a factor of 1 would never move the scale.
      real_field("growthFactor", &LossScalingConfig::growthFactor,
                 RealRange::above_up_to(1.0, kMaxLossScale)),
      real_field("backoffFactor", &LossScalingConfig::backoffFactor,
                 RealRange{0.0, 1.0, false, false}),
      integer_field("growthInterval", &LossScalingConfig::growthInterval, 1),
  };
  return table;
}

}  // namespace

const FieldTable<Config>& config_fields() {
  static const FieldTable<Config> table{
      unsigned_field("seed", &Config::seed),
      enum_field("backend", &Config::backend),
      enum_field("dtype", &Config::dtype),
      bool_field("deterministic", &Config::deterministic),
      enum_field("weightInit", &Config::weightInit),
      optional_enum_field("activation", &Config::activation),
      section_field("updater", &Config::updater, updater_fields),
      section_field("learningRateSchedule", &Config::schedule, schedule_fields),
      real_field("l2", &Config::l2, RealRange::at_least(0.0)),
      real_field("l2Bias", &Config::l2Bias, RealRange::at_least(0.0)),
      enum_field("gradientNormalization", &Config::gradientNormalization),
      real_field("gradientNormalizationThreshold", &Config::gradientNormalizationThreshold,
                 RealRange::above(0.0)),
      integer_field("batchSize", &Config::batchSize, 1),
      integer_field("epochs", &Config::epochs, 1),
      enum_field("onNonFiniteLoss", &Config::onNonFiniteLoss),
      input_type_field(),
      layers_field(),
      data_section_field(),
      section_field("output", &Config::output, output_fields),
      section_field("parallel", &Config::parallel, parallel_fields),
      section_field("memory", &Config::memory, memory_fields),
      section_field("cuda", &Config::cuda, cuda_fields),
      section_field("cpu", &Config::cpu, cpu_fields),
      section_field("earlyStopping", &Config::earlyStopping, early_stopping_fields),
      section_field("lossScaling", &Config::lossScaling, loss_scaling_fields),
  };
  return table;
}

void expand_shorthands(YAML::Node& root) {
  if (!root.IsMap()) return;
  YAML::Node updater = root["updater"];
  if (!updater.IsScalar()) return;
  YAML::Node expanded(YAML::NodeType::Map);
  expanded["type"] = updater;
  root["updater"] = expanded;
}

}  // namespace dl
