// What a checkpoint keeps of each replica of the whole job besides the shared parameters: its
// updater state and its dynamic loss scale, by global worker (rank x workers + local worker).
// ParallelTrainer::replica_states collects them on rank 0; the other ranks send theirs as one
// byte string (pack / unpack), since MPI moves bytes.
#pragma once

#include <string>
#include <vector>

namespace dl {

struct ReplicaStates {
  // One entry per global worker, or a single one when every replica holds the same updater
  // state (synchronous mode, averaged updaters).
  std::vector<std::vector<float>> updaters;
  // One entry per global worker with dynamic loss scaling, else none (LossScaler::save_state).
  std::vector<std::string> loss_scalers;
};

std::string pack(const ReplicaStates& states);
// Appends the states `bytes` holds (written by pack) to `into`; throws InternalError on bytes
// pack did not write.
void unpack_into(const std::string& bytes, ReplicaStates& into);

}  // namespace dl
