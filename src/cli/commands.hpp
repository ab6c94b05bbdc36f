// The dl-train subcommands. Each returns the process exit code; errors are thrown as dl::Error
// and turned into one message and an exit code by main().
#pragma once

#include <string>
#include <vector>

namespace dl {

struct CommonOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
};

// --resume, --overwrite, --restart-epoch.
struct TrainFlags {
  bool resume = false;
  bool overwrite = false;
  bool restart_epoch = false;
};

class ProcessGroup;
int run_train(const CommonOptions& common, const TrainFlags& flags, ProcessGroup& processes);
// validate: json prints one JSON document on standard output instead of text
// (cli/json_output.hpp); config_only skips reading the data files (whose absence, truncation or
// shape is otherwise the error training would give, exit 3).
struct ValidateFlags {
  bool json = false;
  bool config_only = false;
};
int run_validate(const CommonOptions& common, const ValidateFlags& flags);
// model_path: a model (.dlm) or checkpoint file; the config defaults to the run directory's
// config.resolved.yaml beside it.
// predictions_path: when not empty, a CSV of every test example's label, prediction and class
// probabilities ("index,label,predicted,p0,...").
int run_eval(const CommonOptions& common, const std::string& model_path, bool json,
             const std::string& predictions_path);
int run_info(bool json);
// Prints what a model or checkpoint file holds: kind, position, network, and a 64-bit FNV-1a
// hash of the parameter bytes (bit-identical parameters <=> equal hashes, for scripts).
int run_inspect(const std::string& model_path, bool json);
// One run: RUN_DIR/report.html unless `output` names another file; several runs compared on one
// page: `output` (default report.html in the current directory).
int run_report(const std::vector<std::string>& run_directories, const std::string& output);

}  // namespace dl
