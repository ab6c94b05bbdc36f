// What every rank of a job must agree on before it takes part in a collective: the config, the
// build, the data, the resolved backend and collective, and the checkpoint it resumes from.
// Ranks that disagree would otherwise run different numbers of rounds or different collectives
// and wait for each other for ever (or train apart silently). Rank 0 compares every rank's facts
// with its own and, on a difference, fails with one message naming the rank, its host and what
// differs; main() then ends the whole job (abort_job). A single process checks nothing.
#pragma once

#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/dataset.hpp"
#include "nn/model.hpp"
#include "parallel/process_group.hpp"

namespace dl {

struct RankFact {
  std::string name;   // "training set"
  std::string value;  // Collective, at the end of every completed epoch, where both parallel modes leave every replica
// of the job holding the same parameters: rank 0 compares a hash of each rank's worker-0
// parameters with its own. Ranks that compute differently (nodes running other CPU kernel
// variants, GPUs of other models) drift apart silently otherwise; the error names the epoch,
// the rank and its host (exit 1), before the epoch's checkpoint is written.
void check_replicas_agree(ProcessGroup& processes, Model& model, int epoch);

// "1500 samples of 28x28x1, content hash 0123456789abcdef"
  ExitCode code;      // what a difference exits with (README, exit codes)
  std::string fix;    // "give every rank the same data files"
  // How a difference is said, from this rank's value and rank 0's; unset: "value (rank 0:
  // value)". The config's value is its every key, said as the keys that differ.
  std::string (*describe_difference)(const std::string& mine, const std::string& root) = nullptr;
};

// A config as a fact's value (every key and its value, on one line), and its difference from
// rank 0's as "seed: 2 (rank 0: 1); batchSize: ...".
std::string config_fact_value(const Config& config);
std::string config_difference(const std::string& mine, const std::string& root);

// Collective: every rank calls it with the same facts, in the same order. Rank 0 throws an Error
// with the first differing fact's code, naming every fact that differs on the first rank that
// differs (and how many more ranks differ); the other ranks return once rank 0 found none.
void check_ranks_agree(ProcessGroup& processes, const std::vector<RankFact>& facts);

// Collective, at the end of every completed epoch, where both parallel modes leave every replica
// of the job holding the same parameters: rank 0 compares a hash of each rank's worker-0
// parameters with its own. Ranks that compute differently (nodes running other CPU kernel
// variants, GPUs of other models) drift apart silently otherwise; the error names the epoch,
// the rank and its host (exit 1), before the epoch's checkpoint is written.
void check_replicas_agree(ProcessGroup& processes, Model& model, int epoch);

// "1500 samples of 28x28x1, content hash 0123456789abcdef": the hash covers every pixel and
// label, so two data sets of one size and shape but other contents differ (a streamed image
// folder: every file's class folder and name, and label; Dataset::content_hash).
std::string describe_contents(const Dataset& data);

}  // namespace dl
