// Which processes of a job share something on one machine (a CPU mask, a cgroup, a set of
// visible GPUs), so that they split it instead of each taking all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/process_group.hpp"

namespace dl {

struct NodeShare {
  int count = 1;  // processes on this machine holding the same thing, this one included
  int index = 0;  // this process's place among them, in local-rank order
};

// From every rank's key and local rank (element r of each is rank r's, as all_gather returns
// them): the ranks whose key equals rank `rank`'s, ordered by local rank (then rank).
NodeShare share_of(const std::vector<std::uint64_t>& keys,
                   const std::vector<std::uint64_t>& local_ranks, int rank);

// Collective: every rank calls it with what it holds (`what`, e.g. its CPU mask); ranks on the
// same machine (same host name) holding the same `what` share it, in the order of
// group.local_rank().
NodeShare share_on_this_machine(ProcessGroup& group, const std::string& what);

// The processes of this machine that see the same GPUs as this one: the same
// CUDA_VISIBLE_DEVICES, or none set. A launcher that gives each process GPUs of its own (srun
// --gpus-per-task) sets a different value for each, and each then shares with no one.
NodeShare share_of_visible_gpus(ProcessGroup& group);

}  // namespace dl
