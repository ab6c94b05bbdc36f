#include "config/enum_names.hpp"

namespace dl {

DL_ENUM_SPELLINGS(BackendKind, "backend", {BackendKind::kCpu, "cpu"}, {BackendKind::kCuda, "cuda"},
                  {BackendKind::kAuto, "auto"})
DL_ENUM_SPELLINGS(DType, "dtype", {DType::kFloat, "FLOAT"}, {DType::kHalf, "HALF"},
                  {DType::kBFloat16, "BFLOAT16"})
DL_ENUM_SPELLINGS(WeightInit, "weight init", {WeightInit::kXavier, "XAVIER"},
                  {WeightInit::kXavierUniform, "XAVIER_UNIFORM"}, {WeightInit::kRelu, "RELU"},
                  {WeightInit::kReluUniform, "RELU_UNIFORM"}, {WeightInit::kNormal, "NORMAL"},
                  {WeightInit::kUniform, "UNIFORM"}, {WeightInit::kZero, "ZERO"})
DL_ENUM_SPELLINGS(Activation, "activation", {Activation::kIdentity, "identity"},
                  {Activation::kRelu, "relu"}, {Activation::kLeakyRelu, "leakyrelu"},
                  {Activation::kTanh, "tanh"}, {Activation::kSigmoid, "sigmoid"},
                  {Activation::kSoftmax, "softmax"}, {Activation::kGelu, "gelu"},
                  {Activation::kSilu, "silu"}, {Activation::kElu, "elu"},
                  {Activation::kHardswish, "hardswish"}, {Activation::kMish, "mish"},
                  {Activation::kSelu, "selu"})
DL_ENUM_SPELLINGS(UpdaterType, "updater type", {UpdaterType::kSgd, "sgd"},
                  {UpdaterType::kNesterovs, "nesterovs"}, {UpdaterType::kAdam, "adam"},
                  {UpdaterType::kRmsProp, "rmsprop"}, {UpdaterType::kAdamW, "adamw"})
DL_ENUM_SPELLINGS(LearningRateSchedule, "learning rate schedule",
                  {LearningRateSchedule::kNone, "none"}, {LearningRateSchedule::kStep, "step"},
                  {LearningRateSchedule::kExponential, "exponential"},
                  {LearningRateSchedule::kInverse, "inverse"},
                  {LearningRateSchedule::kCosine, "cosine"},
                  {LearningRateSchedule::kOneCycle, "oneCycle"})
DL_ENUM_SPELLINGS(GradientNormalization, "gradient normalization",
                  {GradientNormalization::kNone, "None"},
                  {GradientNormalization::kRenormalizeL2PerLayer, "RenormalizeL2PerLayer"},
                  {GradientNormalization::kRenormalizeL2PerParamType, "RenormalizeL2PerParamType"},
                  {GradientNormalization::kClipElementWiseAbsoluteValue,
                   "ClipElementWiseAbsoluteValue"},
                  {GradientNormalization::kClipL2PerLayer, "ClipL2PerLayer"},
                  {GradientNormalization::kClipL2PerParamType, "ClipL2PerParamType"},
                  {GradientNormalization::kClipL2Global, "ClipL2Global"})
DL_ENUM_SPELLINGS(ImageResize, "image resize mode", {ImageResize::kCenterCrop, "centerCrop"},
                  {ImageResize::kStretch, "stretch"})
DL_ENUM_SPELLINGS(BadFileAction, "bad-file action", {BadFileAction::kStop, "stop"},
                  {BadFileAction::kSkip, "skip"})
DL_ENUM_SPELLINGS(Cifar100Labels, "CIFAR-100 label set", {Cifar100Labels::kFine, "fine"},
                  {Cifar100Labels::kCoarse, "coarse"})
DL_ENUM_SPELLINGS(NonFiniteAction, "non-finite loss action", {NonFiniteAction::kStop, "stop"},
                  {NonFiniteAction::kSkip, "skip"})
DL_ENUM_SPELLINGS(PoolingType, "pooling type", {PoolingType::kMax, "max"},
                  {PoolingType::kAvg, "avg"})
DL_ENUM_SPELLINGS(ConvolutionMode, "convolution mode", {ConvolutionMode::kTruncate, "Truncate"},
                  {ConvolutionMode::kSame, "Same"})
DL_ENUM_SPELLINGS(LossFunction, "loss function",
                  {LossFunction::kNegativeLogLikelihood, "negativeloglikelihood"},
                  {LossFunction::kMcxent, "mcxent"}, {LossFunction::kMse, "mse"})
DL_ENUM_SPELLINGS(ParallelMode, "parallel mode", {ParallelMode::kAveraging, "averaging"},
                  {ParallelMode::kSynchronous, "synchronous"})
DL_ENUM_SPELLINGS(LearningRateScaling, "learning rate scaling",
                  {LearningRateScaling::kNone, "none"}, {LearningRateScaling::kLinear, "linear"})
DL_ENUM_SPELLINGS(ScoreCalculator, "score calculator", {ScoreCalculator::kTestLoss, "testLoss"},
                  {ScoreCalculator::kAccuracy, "accuracy"}, {ScoreCalculator::kF1, "f1"})
DL_ENUM_SPELLINGS(LossScalingMode, "loss scaling mode", {LossScalingMode::kDynamic, "dynamic"},
                  {LossScalingMode::kStatic, "static"}, {LossScalingMode::kNone, "none"})
DL_ENUM_SPELLINGS(DeviceResidency, "device residency", {DeviceResidency::kAuto, "auto"},
                  {DeviceResidency::kAlways, "always"}, {DeviceResidency::kNever, "never"})
DL_ENUM_SPELLINGS(ConsoleMode, "console mode", {ConsoleMode::kAuto, "auto"},
                  {ConsoleMode::kBar, "bar"}, {ConsoleMode::kLines, "lines"},
                  {ConsoleMode::kEpochs, "epochs"}, {ConsoleMode::kJsonl, "jsonl"},
                  {ConsoleMode::kQuiet, "quiet"})
DL_ENUM_SPELLINGS(CpuKernels, "CPU kernels", {CpuKernels::kAuto, "auto"},
                  {CpuKernels::kOnednn, "onednn"}, {CpuKernels::kCblas, "cblas"})
DL_ENUM_SPELLINGS(NcclUsage, "NCCL usage", {NcclUsage::kAuto, "auto"},
                  {NcclUsage::kAlways, "always"})

}  // namespace dl
