#include "train/run_setup.hpp"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "config/enum_names.hpp"
#include "config/read_context.hpp"
#include "config/recipe_checks.hpp"
#include "core/class_names.hpp"
#include "core/error.hpp"
#include "core/memory_limits.hpp"
#include "core/stop_request.hpp"
#include "core/thread_start.hpp"
#include "data/data_sources.hpp"
#include "nn/layer_plan.hpp"
#include "nn/model.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/node_share.hpp"
#include "parallel/thread_budget.hpp"
#include "train/early_stopping.hpp"
#include "train/rank_agreement.hpp"

namespace dl {

namespace {

// A label beyond the output layer's units would stop the first step inside the loss, after the
// run directory was claimed: refused here, naming the labels' file and the key to change.
void check_labels_fit_output(const Config& config, const Dataset& data, const std::string& source) {
  const std::string& labels =
      data.origin().labels_file.empty() ? source : data.origin().labels_file;
  if (config.layers.empty()) return;
  const int units = config.layers.back().nOut;
  const auto top = std::max_element(data.labels().begin(), data.labels().end());
  if (top == data.labels().end() || *top < units) return;
  // At the output layer's line, as the config's own errors are (the data only found it out).
  fail_at(config.layers.back().where,
          fmt::format("the output layer (layers.{}) has nOut {}, but the labels of {} go up to {}",
                      config.layers.size() - 1, units, labels,
                      class_text(*top, data.origin().class_names)),
          fmt::format("set its nOut to at least {}", *top + 1));
}

// Test or validation images of another size than the training images the network is built for:
// refused naming both sizes and the two ways out (other files, or another inputType).
void check_same_size(const Config& config, const Dataset& data, const Dataset& train,
                     const std::string& source, const char* which, const char* keys) {
  if (data.sample_floats() == train.sample_floats()) return;
  throw DataError(fmt::format(
      "{}: {} images are {} but training images are {}; give {} images of {} ({} in {}), or "
      "train on {} images and set inputType to match",
      source, which, data.shape_text(), train.shape_text(), which, train.shape_text(), keys,
      config.sourcePath, data.shape_text()));
}

}  // namespace

// A lower bound of what the CPU workers' activations and their gradients take (two floats per
// value each layer produces, per sample of a batch): a batch size no memory here could hold is
// refused before the run directory is claimed, instead of ending in an allocation failure
// inside the first step. Workspaces, parameters and the data come on top.
namespace {

// The network's parameters and their gradients, each worker's, past `memory`: no batch size
// helps then, only smaller layers (the largest is named).
void check_parameters_fit(const Config& config, const std::vector<PlannedLayer>& plan,
                          const MemoryLimit& memory) {
  const auto layers = build_layers(plan);
  std::size_t total = 0, largest = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    total += layers[i]->parameter_count();
    if (layers[i]->parameter_count() > layers[largest]->parameter_count()) largest = i;
  }
  constexpr long double kFloatsPerParameter = 2;  // the parameter and its gradient
  const long double bytes = static_cast<long double>(total) * config.parallel.workers *
                            kFloatsPerParameter * sizeof(float);
  if (memory.bytes == 0 || bytes <= static_cast<long double>(memory.bytes)) return;
  constexpr long double kGiB = 1024.0L * 1024.0L * 1024.0L;
  const PlannedLayer& big = layers[largest]->plan();
  throw ConfigError(fmt::format(
      "the network's {} parameters with {} worker(s) need at least {:.1f} GiB (each parameter "
      "and its gradient), more than the {:.1f} GiB this process may use ({}); shrink the "
      "layers (the largest: layers.{} '{}', {} parameters: lower its nOut, or its input's size) "
      "in {}",
      total, config.parallel.workers, static_cast<double>(bytes / kGiB),
      static_cast<double>(memory.bytes / kGiB), memory.source, largest, big.config.name,
      layers[largest]->parameter_count(), config.sourcePath));
}

}  // namespace

void check_batch_fits_host_memory(const Config& config, BackendKind kind) {
  if (kind != BackendKind::kCpu || config.layers.empty()) return;
  // The layers' buffers are sized for batchSize, also when the training set is smaller.
  const auto batch = static_cast<std::size_t>(config.batchSize);
  constexpr long double kFloatsPerValue = 2;  // the activation and its gradient
  const std::vector<PlannedLayer> plan = plan_layers(config);
  check_parameters_fit(config, plan, host_memory_limit());
  std::size_t values_per_sample = plan.front().input.size();
  for (const PlannedLayer& layer : plan) values_per_sample += layer.output.size();
  const long double bytes = static_cast<long double>(values_per_sample) * batch *
                            config.parallel.workers * kFloatsPerValue * sizeof(float);
  const MemoryLimit memory = host_memory_limit();
  const std::uint64_t limit = memory.bytes;
  if (limit == 0 || bytes <= static_cast<long double>(limit)) return;
  constexpr long double kGiB = 1024.0L * 1024.0L * 1024.0L;
  // One sample of one worker past the limit: no batch fits, only a smaller network.
  const long double one_sample = bytes / static_cast<long double>(batch * config.parallel.workers);
  const std::string fix = one_sample > static_cast<long double>(limit)
                              ? "one sample alone does not fit: shrink the network (inputType, "
                                "the layers' nOut, strides or pooling)"
                              : "lower batchSize (or parallel.workers)";
  throw ConfigError(fmt::format(
      "batchSize {} with {} worker(s) needs at least {:.1f} GiB for activations and their "
      "gradients ({} values per sample), more than the {:.1f} GiB this process may use ({}); "
      "{} in {}",
      config.batchSize, config.parallel.workers, static_cast<double>(bytes / kGiB),
      values_per_sample, static_cast<double>(limit / kGiB), memory.source, fix, config.sourcePath));
}

namespace {

void load_data(const Config& config, RunSetup& setup) {
  const DataConfig& d = config.data;
  RunData data = load_checked_data(config);
  setup.train = std::move(data.train);
  setup.test = std::move(data.test);
  setup.validation = std::move(data.validation);
  const Dataset& train = *setup.train;
  const Dataset& test = *setup.test;
  // Before the trainer exists: the data path it picks depends on whether the pipeline transforms.
  const InputPipeline pipeline = input_pipeline(d, config.seed, train);
  setup.train->set_pipeline(pipeline);
  setup.test->set_pipeline(pipeline);
  if (setup.validation) setup.validation->set_pipeline(pipeline);
  RunInfo& info = setup.info;
  if (pipeline.transforms()) info.input_pipeline = pipeline.describe();
  if (setup.validation) {
    info.validation_examples = setup.validation->size();
    info.validation_source = validation_source(d);
  }
  info.train_examples = static_cast<std::int64_t>(train.size());
  info.test_examples = static_cast<std::int64_t>(test.size());
  info.sample_shape = train.shape_text();
  for (const std::string& line : origin_notes(train, training_source(d)))
    info.data_notes.push_back(line);
  for (const std::string& line : origin_notes(test, test_source(d)))
    info.data_notes.push_back(line);
  // Once each: one folder may be both the training and the test folder.
  std::unordered_set<std::string> listed;
  for (const Dataset* set : {&train, &test})
    for (const std::string& skipped : set->origin().skipped)
      if (listed.insert(skipped).second) info.skipped_files.push_back(skipped);
}

// Before the first collective: ranks with other data would run other numbers of rounds, and
// ranks on other backends would build other collectives.
void check_same_data_and_backend(const RunSetup& setup, BackendKind kind, ProcessGroup& processes) {
  if (processes.size() == 1) return;  // hashing the data costs a pass over it
  const std::string data_fix =
      "give every rank the same data files (the same paths on a file system every rank sees, "
      "or identical copies)";
  std::vector<RankFact> facts{
      {"training set", describe_contents(*setup.train), ExitCode::kDataError, data_fix},
      {"test set", describe_contents(*setup.test), ExitCode::kDataError, data_fix}};
  if (setup.validation) {
    facts.push_back(
        {"validation set", describe_contents(*setup.validation), ExitCode::kDataError, data_fix});
  }
  facts.push_back({"backend", std::string(enum_name(kind)), ExitCode::kConfigError,
                   "set backend: cpu or cuda explicitly, or make the GPU usable on every rank "
                   "(`dl-train info` on that host says why it is not)"});
  check_ranks_agree(processes, facts);
}

// The threads training starts besides this one, started and ended once now, before the run
// directory is claimed (check_threads_start): the workers' threads (worker 0 is this thread), on
// the CPU each worker's compute threads, and the threads the workers' batch sources start
// (prefetch and a streamed folder's decoding). Names and order as training starts them, so a
// refusal names the thread it would have named then. A worker starts all its compute threads
// once an op has as many tasks (every network bigger than a toy).
void check_training_threads_start(const ThreadBudget& budget, BackendKind kind,
                                  const ParallelTrainer& trainer) {
  std::vector<std::string> names;
  for (int w = 1; w < budget.workers; ++w) names.push_back(worker_thread_name(w));
  if (kind == BackendKind::kCpu) {
    for (int w = 0; w < budget.workers; ++w)
      for (int helper = 2; helper <= budget.threads_per_worker; ++helper)
        names.push_back(cpu::compute_thread_name(helper, budget.threads_per_worker));
  }
  const std::vector<std::string> batch = trainer.batch_threads();
  names.insert(names.end(), batch.begin(), batch.end());
  check_threads_start(static_cast<int>(names.size()),
                      [&](int i) { return names[static_cast<std::size_t>(i)]; });
}

// Several averaging workers meet only every averagingFrequency rounds (and at each epoch's end):
// a checkpoint every N iterations, SIGUSR1's checkpoint and a stop signal's wait for the next
// meeting, since a checkpoint holds the averaged replicas. Said where the checkpoints asked for
// fall between meetings (a job expecting one every 5 iterations got one per epoch).
std::string averaging_meeting_note(const Config& config, int ranks) {
  const ParallelConfig& p = config.parallel;
  const std::int64_t every = config.output.checkpointEveryIterations;
  if (p.mode != ParallelMode::kAveraging || p.workers * ranks == 1 || every == 0 ||
      every % p.averagingFrequency == 0)
    return {};
  return fmt::format(
      "output.checkpointEveryIterations {} falls between the workers' averaging points (every "
      "parallel.averagingFrequency = {} rounds, and each epoch's end): checkpoints, and the "
      "checkpoint of a stop signal or SIGUSR1, are written at the next averaging point; set "
      "checkpointEveryIterations to a multiple of averagingFrequency",
      every, p.averagingFrequency);
}

void build_trainer(const Config& config, ProcessGroup& processes, RunSetup& setup) {
  RunInfo& info = setup.info;
  // One line, so the summary's provenance names both libraries.
  info.blas = select_cpu_kernels(config.cpu.kernels) + "; " + configure_blas_for_this_cpu();
  const ThreadBudget budget = plan_threads(config.parallel, processes);
  set_cpu_threads(budget.threads_per_worker);
  info.threads = budget.describe();
  const BackendChoice backend = choose_backend(config);
  if (processes.is_root()) {
    for (const std::string& note : unread_key_notes(config))
      std::cerr << "dl-train: note: " << note << "\n";
    const std::string meeting = averaging_meeting_note(config, processes.size());
    if (!meeting.empty()) std::cerr << "dl-train: note: " << meeting << "\n";
    std::cerr << reading_note_lines({setup.train.get(), setup.test.get()});
  }
  if (processes.is_root() && !backend.why_not_gpu.empty()) {
    // One short line: a machine without a GPU is normal, not a problem to explain at length.
    std::cerr << "dl-train: training on the CPU (" << backend.why_not_gpu
              << "; `dl-train info` says more)\n";
  }
  const BackendKind kind = backend.kind;
  check_same_data_and_backend(setup, kind, processes);
  check_batch_fits_host_memory(config, kind);
  const NodeShare gpus = share_of_visible_gpus(processes);
  const GpuNeighbours neighbours{gpus.count, gpus.index};
  setup.trainer = std::make_unique<ParallelTrainer>(
      config, *setup.train,
      [&config, kind, neighbours](int w) { return make_backend(kind, config, w, neighbours); },
      [&config, &processes, kind](const std::vector<Backend*>& backends) {
        return make_collective(kind, config, backends, processes);
      },
      processes);
  // After the workers' models and buffers are allocated, which take from the same address space.
  check_training_threads_start(budget, kind, *setup.trainer);
  ParallelTrainer& trainer = *setup.trainer;
  info.backend = trainer.model(0).backend().name();
  info.placement = describe_worker_placement(kind, config, neighbours);
  info.collective = trainer.collective().name();
  info.optimizer = trainer.optimizer(0).describe();
  info.data_placement = trainer.data_placement();
  info.parameters = trainer.model(0).parameter_count();
  info.rounds_per_epoch = trainer.rounds_per_epoch();
  const LossScaler& scaler = trainer.loss_scaler(0);
  info.loss_scaling = scaler.mode();
  info.initial_loss_scale = scaler.scale();
}

// load_data, cut short by a stop signal (core/stop_request.hpp) on any rank: every rank then
// throws StopRequested here, together, since a rank that left alone would keep the others waiting
// in the next collective. The signal is the first stopped rank's.
void load_data_or_stop(const Config& config, RunSetup& setup, ProcessGroup& processes) {
  std::uint64_t stopped = 0;
  try {
    load_data(config, setup);
  } catch (const StopRequested& stop) {
    stopped = static_cast<std::uint64_t>(stop.signal());
  }
  for (const std::uint64_t signal : processes.all_gather(stopped))
    if (signal != 0) throw StopRequested(static_cast<int>(signal));
}

}  // namespace

RunData load_checked_data(const Config& config) {
  const DataConfig& d = config.data;
  RunData data;
  TrainingData training = load_training_data(config);
  data.train = std::make_unique<Dataset>(std::move(training.train));
  if (training.validation)
    data.validation = std::make_unique<Dataset>(std::move(*training.validation));
  data.test = std::make_unique<Dataset>(load_test_set(config));
  const Dataset& train = *data.train;
  const Dataset& test = *data.test;
  const std::size_t expected = static_cast<std::size_t>(config.inputType.height) *
                               config.inputType.width * config.inputType.channels;
  const std::size_t expected_input = config.inputType.kind == InputTypeConfig::Kind::kFeedForward
                                         ? static_cast<std::size_t>(config.inputType.size)
                                         : expected;
  if (train.sample_floats() != expected_input) {
    throw DataError(fmt::format(
        "{}: images are {} ({} values) but inputType expects {} values; fix inputType in {}",
        training_source(d), train.shape_text(), train.sample_floats(), expected_input,
        config.sourcePath));
  }
  // The same count of values in another shape reads every image scrambled (28x28 IDX digits as
  // 14x56): an image file's own shape decides, where the input is an image.
  const InputTypeConfig& in = config.inputType;
  if (!train.has_features() && in.kind != InputTypeConfig::Kind::kFeedForward &&
      (train.channels() != in.channels || train.rows() != in.height || train.cols() != in.width)) {
    throw DataError(fmt::format(
        "{}: images are {} but inputType is convolutionalFlat {}x{}x{} (height x width x "
        "channels): the same {} values in another shape; set inputType's height: {}, width: {}, "
        "channels: {} in {}, or feedForward: {{size: {}}} for a flat vector",
        training_source(d), train.shape_text(), in.height, in.width, in.channels, expected,
        train.rows(), train.cols(), train.channels(), config.sourcePath, expected));
  }
  check_same_size(config, test, train, test_source(d), "test", "data.testImages, data.testLabels");
  check_labels_fit_output(config, train, training_source(d));
  check_labels_fit_output(config, test, test_source(d));
  if (data.validation) check_labels_fit_output(config, *data.validation, validation_source(d));
  if (data.validation)
    check_same_size(config, *data.validation, train, validation_source(d), "validation",
                    "data.validationImages, data.validationLabels or data.validationFile");
  return data;
}

RunSetup set_up_run(const Config& config, ProcessGroup& processes) {
  RunSetup setup;
  RunInfo& info = setup.info;
  info.config = &config;
  info.processes = processes.size();
  info.process_group = processes.name();
  info.global_workers = processes.size() * config.parallel.workers;
  info.max_epochs = epoch_limit(config);
  info.layer_table = layer_table(config);
  // The ranks on this machine under the same memory limit split cacheBytes: auto between them.
  const MemoryLimit memory = host_memory_limit();
  Config data_config = config;
  data_config.data.cacheSharedBy =
      share_on_this_machine(processes, fmt::format("{} bytes of {}", memory.bytes, memory.source))
          .count;
  load_data_or_stop(data_config, setup, processes);
  build_trainer(config, processes, setup);
  return setup;
}

}  // namespace dl
