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
int run_validate(const CommonOptions& common);
// model_path: a model (.dlm) or checkpoint file; the config defaults to the run directory's
// config.resolved.yaml beside it.
int run_eval(const CommonOptions& common, const std::string& model_path);
int run_info();
// Prints what a model or checkpoint file holds: kind, position, network, and a 64-bit FNV-1a
// hash of the parameter bytes (bit-identical parameters <=> equal hashes, for scripts).
int run_inspect(const std::string& model_path);

}  // namespace dl
