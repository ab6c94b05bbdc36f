// The settings that decide the data order and the model (batch size, seed, data files and
// limits, input, layers, workers and mode, and the job's rank count: parallel.ranks). A checkpoint records them, so that a resume under
// other values, which would continue from a position that now means other samples, is refused
// with the keys that differ.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "io/checkpoint.hpp"

namespace dl {

// Adds the config's values of those settings, and `ranks`, to the checkpoint's metadata.
void save_resume_keys(const Config& config, int ranks, CheckpointState& state);

// "key: saved -> now" for each setting whose value differs from the checkpoint's; empty also for
// a checkpoint written before they were recorded. The rank count is compared only when the
// checkpoint records it.
std::vector<std::string> changed_resume_keys(const Config& config, int ranks,
                                             const CheckpointState& state);

// Adds the config's values of the keys that decide the network (inputType, layers: each layer's
// kind, inputs, shape, activation), for a model file: eval, predict and export check them.
void save_network_keys(const Config& config, CheckpointState& state);

// "key: saved -> now" for each of those keys that differs from the file's (a model or a
// checkpoint); empty for a file written before they were recorded.
std::vector<std::string> changed_network_keys(const Config& config, const CheckpointState& state);

// The job's processes (MPI ranks) and each one's parallel.workers.
struct JobLayout {
  int ranks = 1;
  int workers = 1;
  bool operator==(const JobLayout& other) const {
    return ranks == other.ranks && workers == other.workers;
  }
};

// The layout of the job that wrote the checkpoint, when it records one.
std::optional<JobLayout> saved_layout(const CheckpointState& state);
// "2 ranks x 1 worker"
std::string describe(const JobLayout& layout);

}  // namespace dl
