// The run directory: everything a run writes, in one place.
//   .dl-train-run          the marker: this directory is dl-train's (--overwrite needs it)
//   .dl-train.lock         locked (flock) by the process training here; names it (pid, host, time)
//   .dl-train.claim        where flock is missing: the claim of the process training here
//                          (run_directory_claim.hpp), removed when it ends
//   config.resolved.yaml   the config as it was run (every default filled in)
//   scores.csv             epoch,iteration,worker,score,learning_rate (deterministic: identical
//                          for identical runs)
//   timing.csv             epoch,iteration,images_per_second,elapsed_seconds
//   metrics.jsonl          one JSON object per evaluated epoch
//   evaluation.txt         the last Evaluation.stats()
//   checkpoints/           checkpoint-e<epoch>-i<iteration>.dlck, the newest keepLast
//   best_model.dlm         with early stopping: the best model so far
//   model.dlm              the final model
//   summary.json           the outcome, written last
#pragma once

#include <string>
#include <vector>

#include "train/run_directory_lock.hpp"

namespace dl {

class RunDirectory {
 public:
  enum class Existing { kRefuse, kResume, kOverwrite };

  // What a start must not delete with --overwrite: the config file and the data files (the
  // directory may not be one of their ancestors).
  struct Protected {
    std::vector<std::string> inputs;
  };

  // Claims the directory for this process: creates it, takes its lock (held until this object is
  // destroyed; a second process is refused with an IoError naming the holder), refuses an
  // existing run unless `existing` says to resume it or overwrite it (both only under the
  // marker: a directory holding files without it is not dl-train's), removes on --overwrite only
  // the files dl-train writes, and writes the marker.
  RunDirectory(std::string path, Existing existing, const Protected& inputs = {});
  ~RunDirectory();
  RunDirectory(RunDirectory&& other) noexcept;
  RunDirectory& operator=(RunDirectory&&) = delete;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  // Refuses what the constructor would refuse, touching nothing: called before the run is set
  // up, so that a wrong start fails at once and a start that fails later leaves no claim behind.
  static void check(const std::string& path, Existing existing, const Protected& inputs = {});
  // The path alone, for ranks that only read (rank 0 holds the lock).
  static RunDirectory view(std::string path);

  const std::string& path() const { return path_; }

  // Deletes the temporary files ("<name>.tmp-<pid>", `name` one of dl-train's files) that an
  // atomic write leaves behind when its process is killed mid-write, here and in checkpoints/,
  // when that process no longer exists on this machine; another name with such a suffix is kept. Only the rank that writes the run's files may call this: another node's live
  // writer looks dead from here. Returns how many files were removed.
  int remove_stale_temporary_files() const;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string checkpoints() const { return file(kCheckpointsName); }

  static constexpr const char* kMarkerName = ".dl-train-run";
  static constexpr const char* kLockName = ".dl-train.lock";
  static constexpr const char* kClaimName = ".dl-train.claim";
  static constexpr const char* kCheckpointsName = "checkpoints";
  static constexpr const char* kTensorBoardName = "tensorboard";

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
  RunDirectoryLock lock_;
};

// The files of a run directory that dl-train writes (its outputs, temporary files, the marker
// and the lock), by name; a new output adds its name here so that --overwrite can replace it.
bool is_run_output_name(const std::string& name);
// The same inside checkpoints/.
bool is_checkpoint_file_name(const std::string& name);

}  // namespace dl
