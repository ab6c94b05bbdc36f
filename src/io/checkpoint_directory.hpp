// The checkpoints of one run (<run dir>/checkpoints/): numbered files, the newest few kept, and
// on resume the newest one that is intact.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint.hpp"

namespace dl {

class CheckpointDirectory {
 public:
  // keep_last >= 1: how many checkpoints save() leaves in the directory.
  CheckpointDirectory(std::string directory, int keep_last);

  // Writes checkpoint-e<epoch>-i<iteration>.dlck atomically (creating the directory if needed),
  // then deletes the oldest checkpoints beyond keep_last, never the one just written. Returns
  // its path. Throws IoError when the directory cannot be created, the file cannot be written or
  // an old one cannot be deleted.
  std::string save(const CheckpointState& state);

  // The newest checkpoint that reads back valid, with its path. Newer ones that do not, and
  // model files (which hold no position to resume from), are skipped, each adding a line naming
  // its path and what is wrong to `warnings` (may be null). std::nullopt when there is none.
  std::optional<std::pair<std::string, CheckpointState>> load_newest_valid(
      std::vector<std::string>* warnings) const;

  // Paths of the checkpoint files, sorted oldest to newest by iteration (then epoch). Other
  // files (temporary files of an interrupted save included) are ignored. Empty when the
  // directory does not exist; IoError when it cannot be read.
  std::vector<std::string> list() const;

  const std::string& directory() const { return directory_; }

  // The longest name a checkpoint file can have (the largest epoch and iteration), for checks
  // of path lengths.
  static std::string longest_file_name();

 private:
  std::string directory_;
  int keep_last_;
};

}  // namespace dl
