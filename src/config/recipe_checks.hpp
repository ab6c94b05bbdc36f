// Checks that span several keys of the data source and the training recipe (schedule, updater),
// run by the loader after every key was read: each failure names the key where it was written
// and the fix.
#pragma once

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

}  // namespace dl
