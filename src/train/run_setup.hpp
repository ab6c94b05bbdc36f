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
// the trainer on the configured backend.
RunSetup set_up_run(const Config& config, ProcessGroup& processes);

}  // namespace dl
