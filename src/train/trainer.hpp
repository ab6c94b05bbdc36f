// The fit loop: epochs of data-parallel rounds, scores, evaluation, early stopping, checkpoints,
// resume, and the files of the run directory (train/run_directory.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "config/config.hpp"
#include "core/error.hpp"
#include "parallel/process_group.hpp"

namespace dl {

struct TrainOptions {
  bool resume = false;     // continue from the newest valid checkpoint of the run directory
  bool overwrite = false;  // replace an existing run directory
  // With resume: a checkpoint saved under another data order (batch size, data, seed, workers)
  // goes on from its parameters at the start of its epoch instead of being refused.
  bool restart_epoch = false;
  // Set asynchronously (by the CLI's signal handlers): a signal number asking to stop after the
  // current step with a checkpoint, and a request for a checkpoint without stopping.
  const std::atomic<int>* stop_signal = nullptr;
  std::atomic<bool>* checkpoint_request = nullptr;
  std::ostream* log = nullptr;  // progress and reports; null: std::cout
  // Whether `log` ends on a terminal (the console then redraws a progress bar); with `log` null,
  // whether standard output is one.
  bool log_is_terminal = false;
  // The job's processes (MPI ranks); null: this process alone. Rank 0 writes every output.
  ProcessGroup* processes = nullptr;
};

struct TrainOutcome {
  ExitCode exit_code = ExitCode::kOk;  // kInterrupted / kTerminated when stopped by a signal
  int epochs_completed = 0;
  std::int64_t iterations = 0;
  // The test set's accuracy by the last model evaluated; none when the run evaluated nothing (a
  // signal or a divergence before the first epoch's end): summary.json writes null, not 0.
  std::optional<double> test_accuracy;
  // The last score reported (scores.csv), carried across a resume by the checkpoint; none when
  // no score was ever reported (or an older checkpoint did not carry it).
  std::optional<double> final_score;
  double train_seconds = 0.0;
  double images_per_second = 0.0;
  std::string run_directory;
};

TrainOutcome train(const Config& config, const TrainOptions& options);

}  // namespace dl
