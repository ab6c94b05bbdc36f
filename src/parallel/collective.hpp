// Collective operations among the replicas of one data-parallel group. The trainer holds a
// Collective and never knows which implementation: threads in one process (ThreadCollective), a
// single participant (LocalCollective), MPI across processes and NCCL across GPUs (later).
//
// Every participant calls each operation with its own rank and its own buffer, in the same order.
// Sums are taken in one fixed order over the participants (sum_order.hpp), so results are
// identical on every participant and from run to run (DESIGN.md invariant 5).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace dl {

// Thrown inside a participant blocked in (or entering) a collective after another one aborted.
class CollectiveAborted : public std::runtime_error {
 public:
  CollectiveAborted() : std::runtime_error("collective aborted: another worker failed") {}
};

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // Afterwards every participant's `data` holds the element-wise sum over all participants.
  virtual void all_reduce_sum(int rank, float* data, std::size_t n) = 0;
  // Afterwards every participant's `data` holds root's.
  virtual void broadcast(int rank, float* data, std::size_t n, int root) = 0;
  virtual void barrier(int rank) = 0;
  // Wakes every blocked participant, which then throws CollectiveAborted; later calls throw too.
  virtual void abort() = 0;
};

// One participant: every operation is the identity.
class LocalCollective final : public Collective {
 public:
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  void all_reduce_sum(int, float*, std::size_t) override {}
  void broadcast(int, float*, std::size_t, int) override {}
  void barrier(int) override {}
  void abort() override {}
};

}  // namespace dl
