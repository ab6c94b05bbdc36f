// The run directory: everything a run writes, in one place.
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

namespace dl {

class RunDirectory {
 public:
  enum class Existing { kRefuse, kResume, kOverwrite };
  // Creates the directory. An existing run (a directory that is not empty) is refused with an
  // IoError naming it, unless `existing` says to resume it or overwrite it.
  RunDirectory(std::string path, Existing existing);

  const std::string& path() const { return path_; }

  // Deletes the temporary files ("<name>.tmp-<pid>") that an atomic write leaves behind when its
  // process is killed mid-write, here and in checkpoints/, when that process no longer exists on
  // this machine. Only the rank that writes the run's files may call this: another node's live
  // writer looks dead from here. Returns how many files were removed.
  int remove_stale_temporary_files() const;
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string checkpoints() const { return file("checkpoints"); }

 private:
  std::string path_;
};

}  // namespace dl
