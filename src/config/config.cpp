#include "config/config.hpp"

#include "core/message_text.hpp"

namespace dl {

namespace {
// DL4J's default learning rate of each updater (used when the config gives none).
constexpr double kSgdDefaultLearningRate = 1e-3;
constexpr double kNesterovsDefaultLearningRate = 0.1;
constexpr double kAdamDefaultLearningRate = 1e-3;
constexpr double kRmsPropDefaultLearningRate = 0.1;
}  // namespace

std::string SourceLocation::str() const {
  // A value without a line came from a default or from a --set override; for the latter the
  // loader stores the override's text ("--set layers.0.nOut=32") as `file`.
  const std::string source = file.empty() ? std::string("config") : quoted_path(file);
  if (line <= 0) return source;
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

double effective_learning_rate(const UpdaterConfig& u) {
  if (u.learningRate > 0.0) return u.learningRate;
  switch (u.type) {
    case UpdaterType::kSgd:
      return kSgdDefaultLearningRate;
    case UpdaterType::kNesterovs:
      return kNesterovsDefaultLearningRate;
    case UpdaterType::kAdam:
    case UpdaterType::kAdamW:
      return kAdamDefaultLearningRate;
    case UpdaterType::kRmsProp:
      return kRmsPropDefaultLearningRate;
  }
  return kSgdDefaultLearningRate;
}

LossScalingMode effective_loss_scaling_mode(const Config& c) {
  if (c.lossScaling.mode) return *c.lossScaling.mode;
  return c.dtype == DType::kHalf ? LossScalingMode::kDynamic : LossScalingMode::kNone;
}

int epoch_limit(const Config& config) {
  return config.earlyStopping.enabled && config.earlyStopping.maxEpochs > 0
             ? config.earlyStopping.maxEpochs
             : config.epochs;
}

}  // namespace dl
