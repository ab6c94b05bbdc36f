#include "train/run_setup.hpp"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "backend/backend_registry.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "data/data_sources.hpp"
#include "nn/model.hpp"
#include "parallel/collective_registry.hpp"
#include "parallel/node_share.hpp"
#include "parallel/thread_budget.hpp"
#include "train/early_stopping.hpp"

namespace dl {

namespace {

// A label beyond the output layer's units would stop the first step inside the loss, after the
// run directory was claimed: refused here, naming the key to change.
void check_labels_fit_output(const Config& config, const Dataset& data, const std::string& source) {
  if (config.layers.empty()) return;
  const int units = config.layers.back().nOut;
  const std::vector<std::int32_t>& labels = data.labels();
  const auto top = std::max_element(labels.begin(), labels.end());
  if (top == labels.end() || *top < units) return;
  throw ConfigError(fmt::format(
      "{}: labels go up to {} but the output layer (layers.{}) has nOut {}; set its nOut to at "
      "least {} in {}",
      source, *top, config.layers.size() - 1, units, *top + 1, config.sourcePath));
}

void load_data(const Config& config, RunSetup& setup) {
  const DataConfig& d = config.data;
  setup.train = std::make_unique<Dataset>(load_training_set(d));
  setup.test = std::make_unique<Dataset>(load_test_set(d));
  const Dataset& train = *setup.train;
  const Dataset& test = *setup.test;
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
  if (test.sample_floats() != train.sample_floats()) {
    throw DataError(fmt::format("{}: test images are {} but training images are {}", test_source(d),
                                test.shape_text(), train.shape_text()));
  }
  check_labels_fit_output(config, train, training_source(d));
  check_labels_fit_output(config, test, test_source(d));
  RunInfo& info = setup.info;
  info.train_examples = static_cast<std::int64_t>(train.size());
  info.test_examples = static_cast<std::int64_t>(test.size());
  info.sample_shape = train.shape_text();
}

void build_trainer(const Config& config, ProcessGroup& processes, RunSetup& setup) {
  RunInfo& info = setup.info;
  info.blas = configure_blas_for_this_cpu();
  const ThreadBudget budget = plan_threads(config.parallel, processes);
  set_blas_threads(budget.threads_per_worker);
  info.threads = budget.describe();
  const BackendChoice backend = choose_backend(config);
  if (processes.is_root() && !backend.why_not_gpu.empty()) {
    std::cerr << "dl-train: backend: auto trains on the CPU: " << backend.why_not_gpu << "\n";
  }
  const BackendKind kind = backend.kind;
  const NodeShare gpus = share_of_visible_gpus(processes);
  const GpuNeighbours neighbours{gpus.count, gpus.index};
  setup.trainer = std::make_unique<ParallelTrainer>(
      config, *setup.train,
      [&config, kind, neighbours](int w) { return make_backend(kind, config, w, neighbours); },
      [&config, &processes, kind](const std::vector<Backend*>& backends) {
        return make_collective(kind, config, backends, processes);
      },
      processes);
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

}  // namespace

RunSetup set_up_run(const Config& config, ProcessGroup& processes) {
  RunSetup setup;
  RunInfo& info = setup.info;
  info.config = &config;
  info.processes = processes.size();
  info.process_group = processes.name();
  info.global_workers = processes.size() * config.parallel.workers;
  info.max_epochs = epoch_limit(config);
  info.layer_table = layer_table(config);
  load_data(config, setup);
  build_trainer(config, processes, setup);
  return setup;
}

}  // namespace dl
