// The settings that decide the data order and the model (batch size, seed, data files and
// limits, input, layers, workers and mode). A checkpoint records them, so that a resume under
// other values, which would continue from a position that now means other samples, is refused
// with the keys that differ.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "io/checkpoint.hpp"

namespace dl {

// Adds the config's values of those settings to the checkpoint's metadata.
void save_resume_keys(const Config& config, CheckpointState& state);

// "key: saved -> now" for each setting whose value differs from the checkpoint's; empty also for
// a checkpoint written before they were recorded.
std::vector<std::string> changed_resume_keys(const Config& config, const CheckpointState& state);

}  // namespace dl
