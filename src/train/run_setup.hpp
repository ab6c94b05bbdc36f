// What a run needs before its first round: the data sets, the trainer (threads, backends,
// replicas, collective), and a description of both for the listeners (RunInfo).
#pragma once

#include <memory>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/process_group.hpp"
#include "train/training_listener.hpp"

namespace dl {

struct RunSetup {
  std::unique_ptr<Dataset> train, test;
  std::unique_ptr<Dataset> validation;  // null without a validation set
  std::unique_ptr<ParallelTrainer> trainer;
  RunInfo info;  // all but where the run starts (resume)
};

// Loads the data (DataError when it does not fit inputType), sets the BLAS threads and builds
// the trainer on the configured backend. StopRequested on every rank where a watched stop signal
// (core/stop_request.hpp) cut the data read short on any.
RunSetup set_up_run(const Config& config, ProcessGroup& processes);

// The data sets the config names, read whole and checked as a run checks them before it claims
// its directory: each file exists, is readable and complete (DataError, exit 3), the images
// match inputType and each other (DataError), the labels fit the output layer (ConfigError).
// `validate` checks a config's data through this, so that it refuses what training would.
struct RunData {
  std::unique_ptr<Dataset> train, test;
  std::unique_ptr<Dataset> validation;  // null without a validation set
};
RunData load_checked_data(const Config& config);

// A batch size no memory here could hold (a lower bound of the CPU workers' activations against
// physical memory or the cgroup's limit) is a ConfigError naming batchSize; other backends pass.
void check_batch_fits_host_memory(const Config& config, BackendKind kind);

}  // namespace dl
