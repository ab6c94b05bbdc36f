// The enumerations shared by the config schema, the layers and the backends. Their spelling in
// YAML lives in src/config/ (the one schema); here they are only values.
#pragma once

namespace dl {

enum class BackendKind { kCpu, kCuda, kAuto };
enum class DType { kFloat, kHalf, kBFloat16 };

// The math of each is the op contract's (backend/ops/activation.hpp).
enum class Activation {
  kIdentity,
  kRelu,
  kLeakyRelu,
  kTanh,
  kSigmoid,
  kSoftmax,
  kGelu,
  kSilu,
  kElu,
  kHardswish,
  kMish,
  kSelu
};
enum class PoolingType { kMax, kAvg };
enum class ConvolutionMode { kTruncate, kSame };
enum class LossFunction { kNegativeLogLikelihood, kMcxent, kMse };
enum class WeightInit { kXavier, kXavierUniform, kRelu, kReluUniform, kNormal, kUniform, kZero };
// kAdamW: Adam's update rule plus decoupled weight decay (applied by src/optim's Optimizer).
enum class UpdaterType { kSgd, kNesterovs, kAdam, kRmsProp, kAdamW };
enum class LayerType {
  kConvolution,
  kSubsampling,
  kDense,
  kOutput,
  kDropout,
  kBatchNormalization,
  kGlobalPooling,
  kActivation,
  kAdd,
  kConcat
};
enum class ParallelMode { kAveraging, kSynchronous };
// The library behind the CPU backend's matrix products (config key cpu.kernels).
enum class CpuKernels { kAuto, kOnednn, kCblas };

// LeakyReLU's negative slope when the config gives none (DL4J's default).
inline constexpr float kDefaultLeakyReluAlpha = 0.01f;

}  // namespace dl
