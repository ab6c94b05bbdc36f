// ParallelTrainer's side of checkpoints over ranks: what each rank's replicas hold beyond the
// parameters (updater and loss-scaler states), gathered by rank 0, and the decisions rank 0
// shares, during which the other ranks serve its requests for those states.
#include "core/error.hpp"
#include "parallel/parallel_trainer.hpp"
#include "parallel/replica_states.hpp"

namespace dl {

namespace {

// What the other ranks receive in share_decision when rank 0 asks for their replicas' states
// instead of deciding (decisions are >= 0).
constexpr int kReplicaStatesRequest = -1;

}  // namespace

bool ParallelTrainer::replicas_share_updater_state() const {
  return config_.parallel.mode == ParallelMode::kSynchronous || config_.parallel.averageUpdaters;
}

ReplicaStates ParallelTrainer::local_replica_states() {
  ReplicaStates states;
  for (int w = 0; w < workers(); ++w) {
    if (global(w) == 0 || !replicas_share_updater_state()) {
      Optimizer& opt = optimizer(w);
      std::vector<float> s(opt.state_floats());
      if (!s.empty()) model(w).backend().download(s.data(), opt.state(), s.size() * sizeof(float));
      states.updaters.push_back(std::move(s));
    }
    // Every scaler: beside a dynamic scale, each counts the steps skipped as non-finite.
    states.loss_scalers.push_back(loss_scaler(w).save_state());
  }
  return states;
}

ReplicaStates ParallelTrainer::replica_states() {
  DL_CHECK(processes_.is_root(), "only rank 0 collects the replicas' states");
  ReplicaStates states = local_replica_states();
  if (processes_.size() == 1) return states;
  int request = kReplicaStatesRequest;
  processes_.broadcast(&request, sizeof(request), 0);
  const std::vector<std::string> parts = processes_.gather(std::string(), 0);
  for (std::size_t r = 1; r < parts.size(); ++r) unpack_into(parts[r], states);
  return states;
}

int ParallelTrainer::share_decision(int decision) {
  DL_CHECK(decision >= 0, "decisions are >= 0");
  if (processes_.is_root()) {
    processes_.broadcast(&decision, sizeof(decision), 0);
    return decision;
  }
  for (;;) {
    int message = 0;
    processes_.broadcast(&message, sizeof(message), 0);
    if (message != kReplicaStatesRequest) return message;
    processes_.gather(pack(local_replica_states()), 0);
  }
}

}  // namespace dl
