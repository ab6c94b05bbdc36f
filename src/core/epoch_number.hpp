#pragma once

#include <cstdint>
#include <string>

// One epoch numbering for everything a person reads: the console, logs, messages, the report.
// There the first epoch is "epoch 1" ("Epoch 1/3" on the bar, "epoch 1/3 done" after it).
// Files keep the index, counted from 0, where docs/OUTPUTS.md says so (scores.csv,
// metrics.jsonl, checkpoints, early_stopping.json's numeric fields, --json output, `inspect`'s
// field dump).

namespace dl {

constexpr std::int64_t epoch_number(std::int64_t epoch_index) {
  return epoch_index + 1;
}

// A saved position (the epoch in progress, from 0, and the next round in it) as a person reads
// it: "after epoch 2" at an epoch's end, "in epoch 3 after round 40" inside one.
inline std::string describe_position(std::int64_t epoch_index, std::int64_t next_round) {
  if (next_round == 0) {
    return epoch_index == 0 ? std::string("before epoch 1")
                            : "after epoch " + std::to_string(epoch_index);
  }
  return "in epoch " + std::to_string(epoch_number(epoch_index)) + " after round " +
         std::to_string(next_round);
}

}  // namespace dl
