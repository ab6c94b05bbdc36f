// Checks that span several keys of the data source and the training recipe (schedule, updater),
// run by the loader after every key was read: each failure names the key where it was written
// and the fix.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/read_context.hpp"

namespace dl {

// The data format's own checks (data/data_format.hpp: e.g. CIFAR's class count and 3 x 32 x 32
// inputType) and the input pipeline's keys. Known before any file is read, so `validate`
// reports them.
void check_data_source(const ReadContext& ctx, const Config& config);

// learningRateSchedule: a warm-up shorter than a given totalIterations; cosine's
// minLearningRate below the learning rate.
void check_schedule(const ReadContext& ctx, const Config& config);

// updater: weightDecay and weightDecayBias away from their defaults with a rule other than adamw,
// which would leave them without effect (a PyTorch recipe's weight_decay is l2 here).
void check_updater(const ReadContext& ctx, const Config& config);

// Keys set away from their defaults that nothing reads under the config's other settings: an
// updater key its rule does not use (momentum under adam), earlyStopping's keys while it is not
// enabled. Accepted (a config switched by --set updater.type or earlyStopping.enabled keeps
// them), but said, one line each: "updater.momentum (0.95) has no effect: ...".
std::vector<std::string> unread_key_notes(const Config& config);

}  // namespace dl
