#include "config/recipe_checks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/config_loader.hpp"
#include "config/enum_names.hpp"
#include "data/data_format.hpp"

namespace dl {
namespace {

// Normalization lists need normalize and one value per channel of the data (not of inputType:
// CIFAR read as feedForward has 3, IDX images seen as 4x14x14 one); crops and flips need images.
void check_input_pipeline(const ReadContext& ctx, const Config& config) {
  const DataConfig& data = config.data;
  const bool image = config.inputType.kind == InputTypeConfig::Kind::kConvolutionalFlat;
  const DataFormatKind& format = data_format(data.format);
  const int channels = format.channels(config);
  for (const auto& [key, list] :
       {std::pair{"channelMean", &data.channelMean}, std::pair{"channelStd", &data.channelStd}}) {
    if (list->empty()) continue;
    const std::string path = std::string("data.") + key;
    if (!data.normalize)
      fail_at(ctx.remembered(path), path + " is given but data.normalize is false",
              "set data.normalize: true, or remove " + path);
    if (static_cast<int>(list->size()) != channels)
      fail_at(ctx.remembered(path),
              fmt::format("{} has {} values but the data (data.format {}) has {} channel(s)",
                          path, list->size(), format.name, channels),
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

// The pipeline's keys here; each format's own checks (class count, inputType, validation
// sources) in its declaration (data/data_format.hpp).
void check_data_source(const ReadContext& ctx, const Config& config) {
  data_format(config.data.format).check(ctx, config);
  check_input_pipeline(ctx, config);
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

void check_updater(const ReadContext& ctx, const Config& config) {
  const UpdaterConfig& u = config.updater;
  if (u.type == UpdaterType::kAdamW) return;
  const UpdaterConfig defaults;
  // A default passes: config.resolved.yaml writes every key for every rule and must read back.
  const char* key = u.weightDecay != defaults.weightDecay           ? "weightDecay"
                    : u.weightDecayBias != defaults.weightDecayBias ? "weightDecayBias"
                                                                    : nullptr;
  if (key == nullptr) return;
  const std::string path = std::string("updater.") + key;
  fail_at(ctx.remembered(path),
          fmt::format("{} is set, but updater.type {} does not read it: decoupled weight decay is "
                      "adamw's, so this run would train with no decay",
                      path, enum_name(u.type)),
          "set updater.type: adamw; or, for PyTorch's weight_decay with SGD or Adam (an L2 term "
          "added to the gradient), set l2 (and l2Bias for biases) and remove " +
              path);
}

namespace {

// The updater keys that only some rules read (weightDecay: check_updater refuses it).
struct RuleKey {
  const char* key;
  double UpdaterConfig::*value;
  std::vector<UpdaterType> read_by;
  const char* readers;
};

const std::vector<RuleKey>& rule_keys() {
  static const std::vector<RuleKey> keys = {
      {"momentum",
       &UpdaterConfig::momentum,
       {UpdaterType::kNesterovs},
       "nesterovs's (adam's is beta1)"},
      {"beta1",
       &UpdaterConfig::beta1,
       {UpdaterType::kAdam, UpdaterType::kAdamW},
       "adam's and adamw's"},
      {"beta2",
       &UpdaterConfig::beta2,
       {UpdaterType::kAdam, UpdaterType::kAdamW},
       "adam's and adamw's"},
      {"epsilon",
       &UpdaterConfig::epsilon,
       {UpdaterType::kAdam, UpdaterType::kAdamW, UpdaterType::kRmsProp},
       "adam's, adamw's and rmsprop's"},
      {"rmsDecay", &UpdaterConfig::rmsDecay, {UpdaterType::kRmsProp}, "rmsprop's"},
  };
  return keys;
}

// The keys of the dumped section `name` whose values differ between two configs.
std::vector<std::string> changed_section_keys(const Config& a, const Config& b,
                                              const std::string& name) {
  const YAML::Node one = YAML::Load(dump_config_yaml(a))[name];
  const YAML::Node two = YAML::Load(dump_config_yaml(b))[name];
  std::vector<std::string> keys;
  for (const auto& entry : one) {
    const std::string key = entry.first.Scalar();
    if (YAML::Dump(entry.second) != YAML::Dump(two[key])) keys.push_back(key);
  }
  return keys;
}

}  // namespace

std::vector<std::string> unread_key_notes(const Config& config) {
  std::vector<std::string> notes;
  const UpdaterConfig& u = config.updater;
  const UpdaterConfig defaults;
  for (const RuleKey& k : rule_keys()) {
    const bool read = std::find(k.read_by.begin(), k.read_by.end(), u.type) != k.read_by.end();
    if (read || u.*k.value == defaults.*k.value) continue;
    notes.push_back(
        fmt::format("updater.{} ({}) has no effect: updater.type {} does not read it; "
                    "it is {}",
                    k.key, u.*k.value, enum_name(u.type), k.readers));
  }
  // The schedule's keys its type does not read: minLearningRate under step decayed below it
  // anyway, without a word.
  static const std::map<std::string, std::pair<std::vector<LearningRateSchedule>, const char*>>
      kScheduleReaders = {{"gamma",
                           {{LearningRateSchedule::kStep, LearningRateSchedule::kExponential,
                             LearningRateSchedule::kInverse},
                            "step's, exponential's and inverse's"}},
                          {"power", {{LearningRateSchedule::kInverse}, "inverse's"}},
                          {"step", {{LearningRateSchedule::kStep}, "step's"}},
                          {"totalIterations",
                           {{LearningRateSchedule::kCosine, LearningRateSchedule::kOneCycle},
                            "cosine's and oneCycle's"}},
                          {"minLearningRate", {{LearningRateSchedule::kCosine}, "cosine's"}},
                          {"divFactor", {{LearningRateSchedule::kOneCycle}, "oneCycle's"}},
                          {"finalDivFactor", {{LearningRateSchedule::kOneCycle}, "oneCycle's"}}};
  Config unscheduled = config;
  unscheduled.schedule = ScheduleConfig{};
  unscheduled.schedule.type = config.schedule.type;
  for (const std::string& key : changed_section_keys(config, unscheduled, "learningRateSchedule")) {
    const auto readers = kScheduleReaders.find(key);
    if (readers == kScheduleReaders.end()) continue;
    const auto& types = readers->second.first;
    if (std::find(types.begin(), types.end(), config.schedule.type) != types.end()) continue;
    notes.push_back(fmt::format(
        "learningRateSchedule.{} has no effect: learningRateSchedule.type {} does not read it; "
        "it is {}",
        key, enum_name(config.schedule.type), readers->second.second));
  }
  if (!config.earlyStopping.enabled) {
    Config plain = config;
    plain.earlyStopping = EarlyStoppingConfig{};
    const std::vector<std::string> keys = changed_section_keys(config, plain, "earlyStopping");
    if (!keys.empty())
      notes.push_back(fmt::format("earlyStopping.{} {} no effect: earlyStopping.enabled is false",
                                  fmt::join(keys, ", earlyStopping."),
                                  keys.size() == 1 ? "has" : "have"));
  }
  return notes;
}

}  // namespace dl
