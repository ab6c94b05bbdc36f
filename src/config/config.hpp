// The typed, validated configuration of one run. This struct is the only thing the rest of
// dl-train reads; YAML is parsed, checked and defaulted in src/config/ alone (config_loader.hpp).
// Every default is written here, once; docs/CONFIG.md documents each key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/layer_config.hpp"
#include "config/source_location.hpp"
#include "core/kinds.hpp"

namespace dl {

struct UpdaterConfig {
  UpdaterType type = UpdaterType::kNesterovs;
  // 0 means "the updater's DL4J default": Sgd 1e-3, Nesterovs 0.1, Adam 1e-3, RmsProp 0.1.
  double learningRate = 0.0;
  double momentum = 0.9;   // Nesterovs
  double beta1 = 0.9;      // Adam
  double beta2 = 0.999;    // Adam
  double epsilon = 1e-8;   // Adam, RmsProp
  double rmsDecay = 0.95;  // RmsProp
  // AdamW: decoupled weight decay, each step multiplies every trainable parameter by
  // 1 - learningRate * weightDecay before the Adam update (PyTorch's default coefficient).
  double weightDecay = 0.01;
  // AdamW: false leaves biases and batch normalization's scale and shift undecayed (the usual
  // recipe for ResNets); true decays them too, as PyTorch's AdamW does for every parameter.
  bool weightDecayBias = true;
};

enum class LearningRateSchedule { kNone, kStep, kExponential, kInverse, kCosine, kOneCycle };

// The formulas are in src/optim/learning_rate_schedule.hpp.
struct ScheduleConfig {
  LearningRateSchedule type = LearningRateSchedule::kNone;
  double gamma = 0.1;            // step: lr * gamma^floor(iter/step); exponential: lr * gamma^iter;
  double power = 1.0;            // inverse: lr / (1 + gamma*iter)^power
  int64_t step = 1000;           // iterations per step (step schedule)
  int64_t warmupIterations = 0;  // linear warm-up before any schedule; 0 = none
  int64_t totalIterations = 0;   // cosine, oneCycle: length; 0 = epochs x iterations per epoch
  double minLearningRate = 0.0;  // cosine: the rate it anneals to
  double divFactor = 25.0;       // oneCycle: starts at lr / divFactor (PyTorch's OneCycleLR)
  double finalDivFactor = 1e4;   // oneCycle: ends at lr / divFactor / finalDivFactor
};

// DL4J's gradientNormalization, applied to the (averaged) gradients before L2 and the updater,
// plus a global-norm clip as PyTorch's clip_grad_norm_ and Keras's global_clipnorm; t is
// gradientNormalizationThreshold. PerLayer: all parameters of a layer together; PerParamType:
// each weight or bias tensor on its own.
enum class GradientNormalization {
  kNone,
  kRenormalizeL2PerLayer,         // g /= ||g||
  kRenormalizeL2PerParamType,     // g /= ||g||
  kClipElementWiseAbsoluteValue,  // g = clamp(g, -t, t)
  kClipL2PerLayer,                // g *= t / ||g|| when ||g|| > t
  kClipL2PerParamType,            // g *= t / ||g|| when ||g|| > t
  kClipL2Global,                  // the same over every parameter of the network
};

struct InputTypeConfig {
  enum class Kind { kConvolutionalFlat, kFeedForward } kind = Kind::kConvolutionalFlat;
  int height = 28;
  int width = 28;
  int channels = 1;
  int size = 784;  // feedForward
};

// Where the training set lives while training: uploaded once into each worker's backend memory
// (batches are then gathered there), or kept on the host (each batch converted there and
// uploaded). auto: resident on CUDA when it fits memory.maximumDeviceCacheableLength.
enum class DeviceResidency { kAuto, kAlways, kNever };

// The files a data set is read from, one value per format of the data format registry
// (src/data/data_format.hpp, which spells them): IDX image and label files, the binary
// CIFAR-10 / CIFAR-100 batches, folders of PNG and JPEG images with one subfolder per class,
// CSV files of numbers with a label column.
enum class DataFormat { kIdx, kCifar10, kCifar100, kImageFolder, kCsv };
// How an image is fitted to inputType (src/data/image_resize.hpp).
enum class ImageResize { kCenterCrop, kStretch };
// A file a reader cannot use (a corrupt image, a file that is not one): the run stops with its
// name, or the file is left out, counted and named in the log.
enum class BadFileAction { kStop, kSkip };
// Which of a CIFAR-100 record's two labels is the class: the 100 fine or the 20 coarse ones.
enum class Cifar100Labels { kFine, kCoarse };

struct DataConfig {
  DataFormat format = DataFormat::kIdx;
  std::string directory = "data/cifar-10-batches-bin";  // cifar10, cifar100 only
  Cifar100Labels cifar100Labels = Cifar100Labels::kFine;
  std::string trainImages = "data/mnist/train-images-idx3-ubyte.gz";
  std::string trainLabels = "data/mnist/train-labels-idx1-ubyte.gz";
  std::string testImages = "data/mnist/t10k-images-idx3-ubyte.gz";
  std::string testLabels = "data/mnist/t10k-labels-idx1-ubyte.gz";
  bool shuffle = true;
  int64_t trainLimit = 0;  // use only the first N training images; 0 = all (every format)
  int64_t testLimit = 0;   // 0 = all
  // A validation set: this fraction of the training set held back (data/validation_split.hpp has
  // the rule), or separate IDX files, or one CIFAR batch file (a bare file name is looked up in
  // `directory`); unset and 0: no validation set.
  double validationSplit = 0.0;
  std::optional<std::string> validationImages, validationLabels;
  std::optional<std::string> validationFile;  // cifar10, cifar100 only
  // imagefolder: folders holding one subfolder of images per class (class names sorted).
  std::string trainDirectory = "data/images/train";
  std::string testDirectory = "data/images/test";
  std::optional<std::string> validationDirectory;
  ImageResize resize = ImageResize::kCenterCrop;
  BadFileAction onBadFile = BadFileAction::kStop;  // imagefolder: files; csv: rows
  // imagefolder: each folder's decoded images are kept in memory up to this many bytes; a folder
  // whose decoded size exceeds it is decoded ahead of training instead (data/image_store.hpp).
  // Unset: auto, half the memory this process may use (core/memory_limits.hpp), split between
  // cacheSharedBy processes.
  std::optional<std::uint64_t> cacheBytes;
  // Not a key: how many processes of this run share this machine's memory (the trainer's setup
  // counts them; 1 for validate, eval and predict), so that 8 ranks on one 8-GPU server do not
  // each take half of its memory for cacheBytes: auto.
  int cacheSharedBy = 1;
  // csv: rows of numbers, one of them the label (DL4J's CSVRecordReader: skipNumLines,
  // delimiter; labelIndex of RecordReaderDataSetIterator; -1: the last field).
  std::string trainFile = "data/train.csv";
  std::string testFile = "data/test.csv";
  int skipLines = 0;
  std::string delimiter = ",";
  int labelIndex = -1;
  // The input pipeline (data/input_pipeline.hpp): per-channel normalization with the given mean
  // and std (empty: computed from the training set), random crops from the image zero-padded by
  // randomCrop pixels on each side (0 = off), random horizontal flips.
  bool normalize = false;
  std::vector<double> channelMean, channelStd;
  int randomCrop = 0;
  bool horizontalFlip = false;
  int numClasses = 10;
  DeviceResidency deviceResident = DeviceResidency::kAuto;
};

// What the console shows (console_log.cpp): auto = a progress bar on a terminal, plain lines
// otherwise; epochs = one line per epoch; jsonl = one JSON object per line; quiet = nothing.
enum class ConsoleMode { kAuto, kBar, kLines, kEpochs, kJsonl, kQuiet };

struct OutputConfig {
  std::string directory = "runs/mnist";
  int64_t scoreEveryIterations = 10;  // a score row every N iterations (DL4J listener frequency)
  int64_t checkpointEveryIterations = 0;  // 0 = checkpoint only at the end of each epoch
  int keepLast = 3;                       // checkpoints kept; older ones are deleted
  bool printEvaluation = true;            // Evaluation.stats() after each epoch
  ConsoleMode console = ConsoleMode::kAuto;
  bool report = true;        // report.html at every epoch end and at the end
  bool tensorboard = false;  // TensorBoard event files in <run>/tensorboard/
};

enum class LearningRateScaling { kNone, kLinear };

struct ParallelConfig {
  ParallelMode mode = ParallelMode::kAveraging;
  int workers = 1;
  int prefetchBuffer = 2;       // minibatches each worker's loader keeps ready; 0 = off
  int averagingFrequency = 1;   // averaging mode: average every N rounds
  bool averageUpdaters = true;  // averaging mode: average updater state too
  bool reportScoreAfterAveraging = true;
  int blasThreads = 0;  // per worker; 0 = cores / workers (at least 1)
  LearningRateScaling learningRateScaling = LearningRateScaling::kNone;
  int64_t warmupIterations = 0;  // linear scaling: ramp from lr to workers*lr over N iterations
  // Seconds a rank may wait in one collective of several processes before it ends the job; 0 =
  // for ever. PyTorch's default, long enough for rank 0's evaluation and checkpoints.
  int64_t timeout = 1800;
};

// DL4J's cache limits, in bytes. Used by the CUDA backend's caching allocators; validated always.
struct MemoryConfig {
  uint64_t maximumDeviceCacheableLength = 1ull << 30;
  uint64_t maximumDeviceCache = 6ull << 30;
  uint64_t maximumHostCacheableLength = 1ull << 30;
  uint64_t maximumHostCache = 6ull << 30;
};

// When the GPU collective uses NCCL: auto = only when replicas sit on more than one GPU or in
// more than one process; always = also for a single replica (to exercise the NCCL path, e.g. a
// one-rank mpirun job).
enum class NcclUsage { kAuto, kAlways };

struct CudaConfig {
  std::vector<int> devices;  // empty = all visible
  bool allowMultiGPU = true;
  NcclUsage nccl = NcclUsage::kAuto;
  int maximumGridSize = 4096;
  int maximumBlockSize = 256;
  // Record the fixed-shape part of a training step (forward, loss, backward) as a CUDA graph after
  // its first run and replay it (docs/CUDA.md); false runs every op as its own launch.
  bool graphs = true;
};

// The CPU backend's settings.
struct CpuConfig {
  CpuKernels kernels = CpuKernels::kAuto;  // auto: oneDNN when built, else the CBLAS
};

enum class ScoreCalculator { kTestLoss, kAccuracy, kF1 };
enum class NonFiniteAction { kStop, kSkip };

struct EarlyStoppingConfig {
  bool enabled = false;
  int maxEpochs = 0;                      // 0 = the run's `epochs`
  int patience = 0;                       // epochs without improvement before stopping; 0 = off
  double minImprovement = 0.0;            // smallest change that counts as an improvement
  std::optional<double> bestScoreTarget;  // stop once the score reaches this
  double maxTimeSeconds = 0.0;            // 0 = no limit
  std::optional<double> maxScore;  // iteration condition: stop when the minibatch score exceeds
  bool stopOnInvalidScore = true;  // iteration condition: NaN/Inf score
  ScoreCalculator scoreCalculator = ScoreCalculator::kTestLoss;
  int evaluateEveryNEpochs = 1;
  bool saveBestModel = true;
};

enum class LossScalingMode { kNone, kStatic, kDynamic };

// Loss scaling for mixed precision: the loss gradient is multiplied by a scale S before the
// backward pass and the gradients by 1/S before the update, so that small fp16 gradients do not
// flush to zero. Dynamic: a step whose gradients overflow is skipped and S shrinks; S grows again
// after growthInterval good steps. Powers of two keep the scaling exact.
struct LossScalingConfig {
  static constexpr double kDefaultInitialScale = 65536.0;  // 2^16
  static constexpr double kDefaultGrowthFactor = 2.0;
  static constexpr double kDefaultBackoffFactor = 0.5;
  static constexpr int64_t kDefaultGrowthInterval = 2000;

  // Unset in the file: dynamic for dtype HALF, none otherwise. The loader resolves it, so a loaded
  // Config always has it set (see effective_loss_scaling_mode for a Config built in code).
  std::optional<LossScalingMode> mode;
  double initialScale = kDefaultInitialScale;
  double growthFactor = kDefaultGrowthFactor;
  double backoffFactor = kDefaultBackoffFactor;
  int64_t growthInterval = kDefaultGrowthInterval;
};

struct Config {
  std::string sourcePath;  // the YAML file this came from

  uint64_t seed = 123;
  BackendKind backend = BackendKind::kAuto;
  DType dtype = DType::kFloat;
  // The same bits every run (the CUDA backend's cuDNN algorithms by a fixed rule); false lets it
  // time cuDNN's algorithms and take non-deterministic ones. The CPU backend is the same either
  // way.
  bool deterministic = true;
  WeightInit weightInit = WeightInit::kXavier;
  std::optional<Activation> activation;  // global default for layers that set none
  UpdaterConfig updater;
  ScheduleConfig schedule;
  double l2 = 0.0;      // on weights (not biases)
  double l2Bias = 0.0;  // on biases
  GradientNormalization gradientNormalization = GradientNormalization::kNone;
  double gradientNormalizationThreshold = 1.0;
  int batchSize = 128;  // per worker
  int epochs = 1;
  NonFiniteAction onNonFiniteLoss = NonFiniteAction::kStop;

  InputTypeConfig inputType;
  std::vector<LayerConfig> layers;

  DataConfig data;
  OutputConfig output;
  ParallelConfig parallel;
  MemoryConfig memory;
  CudaConfig cuda;
  CpuConfig cpu;
  EarlyStoppingConfig earlyStopping;
  LossScalingConfig lossScaling;
};

// The learning rate actually used: the configured one, or the updater's DL4J default.
double effective_learning_rate(const UpdaterConfig& u);

// The loss-scaling mode actually used: the configured one, or the dtype's default (dynamic for
// HALF, none otherwise).
LossScalingMode effective_loss_scaling_mode(const Config& c);

// The run's epoch limit: earlyStopping.maxEpochs when early stopping is on and sets one, else
// `epochs`. The run's length for what depends on it (a schedule's default length) too.
int epoch_limit(const Config& config);

}  // namespace dl
