// The collective for worker threads of one process sharing host memory (CPU replicas).
// all_reduce_sum: after a barrier each thread sums its own slice of the buffers across all
// participants, in the job's one order (sum_order.hpp), and writes the result to every participant's buffer; a second
// barrier publishes it. Work is split evenly, no copy is made, and the result is bit-identical
// on every participant.
#pragma once

#include <vector>

#include "parallel/collective.hpp"
#include "parallel/rendezvous.hpp"

namespace dl {

class ThreadCollective final : public Collective {
 public:
  explicit ThreadCollective(int participants);
  int size() const override { return participants_; }
  std::string name() const override { return "threads"; }
  void all_reduce_sum(int rank, float* data, std::size_t n) override;
  void broadcast(int rank, float* data, std::size_t n, int root) override;
  void barrier(int rank) override;
  void abort() override;

 private:
  const int participants_;
  Rendezvous meeting_;  // between phases; throws CollectiveAborted after abort()
  std::vector<float*> buffers_;
};

}  // namespace dl
