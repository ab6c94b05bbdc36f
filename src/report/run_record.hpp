// A run directory as the report reads it back from its files (docs/OUTPUTS.md): the score log,
// the timing log, the per-epoch metrics, the last evaluation, the resolved config and the
// summary. Whatever is missing (a run still in its first epoch, an older run) stays empty.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/file_access.hpp"
#include "io/json_writer.hpp"

namespace dl {

struct SeriesPoint {
  double x = 0.0;
  double y = 0.0;
};

struct EpochRecord {
  int epoch = 0;
  std::int64_t iteration = 0;
  // The set evaluated after the epoch: the validation set when the run has one (`validation`),
  // else the test set.
  bool validation = false;
  double accuracy = 0.0, f1 = 0.0, loss = 0.0;
  double seconds = 0.0, images_per_second = 0.0;
  // metrics.jsonl's train_loss (with the L2 term) and train_accuracy; from a run that wrote no
  // train_loss, the mean of the epoch's score rows in scores.csv (and no accuracy: NaN).
  double train_loss = 0.0, train_accuracy = 0.0;
};

struct RunRecord {
  std::string directory;
  std::string name;                            // the directory's last component
  std::vector<SeriesPoint> loss;               // score per iteration (scores.csv, all workers)
  std::vector<SeriesPoint> learning_rate;      // per iteration (scores.csv)
  std::vector<SeriesPoint> images_per_second;  // per iteration (timing.csv)
  std::vector<EpochRecord> epochs;             // metrics.jsonl
  bool validation = false;                     // an epoch evaluated a validation set
  // The test set's accuracy by the final model (metrics.jsonl's "final" record, written with a
  // validation set); NaN without one.
  double final_test_accuracy = 0.0;
  std::string config_yaml;  // config.resolved.yaml
  std::string layer_table;  // from the resolved config
  Json summary;             // summary.json (null until the run ends)
  Json evaluation;          // evaluation.json: the last epoch's evaluation (null before the first)
  // What of the logs was left out, one line each ("scores.csv: 2 lines that are not scores rows
  // (the first: line 7)"): lines edited or damaged. The last line of a log that ends without
  // its newline is the one a killed run was writing, left out without a word.
  std::vector<std::string> left_out;
  // Whose error a log that is no regular file gets: `report`'s (a wrong run directory, exit 2) or
  // the training run's own, reading its directory back (exit 6).
  InputRole reading = InputRole::kRunFile;
};

// The files of a run directory the report reads, each optional.
std::vector<std::string> run_record_files(const std::string& directory);

// Reads what there is; throws IoError when `directory` is not a directory, and an error with
// exit code 2 when it holds none of the logs a run writes (a data folder, a typo's neighbour),
// or when one of them is not a regular file or is implausibly large (a FIFO would block the
// read for ever): each is read through the checked opening of every input (io/file_access.hpp).
RunRecord read_run_record(const std::string& directory, InputRole role = InputRole::kRunFile);

}  // namespace dl
