// The collective of a data-parallel group spread over processes: the local workers (threads) of
// this process sum through a ThreadCollective, then worker 0 of each process sums across
// processes through the ProcessGroup (MPI), then worker 0 hands the result to its local workers.
// The trainer sees one Collective of size `local workers`, whatever the number of processes.
#pragma once

#include <memory>

#include "parallel/collective.hpp"
#include "parallel/process_group.hpp"
#include "parallel/thread_collective.hpp"

namespace dl {

class HierarchicalCollective final : public Collective {
 public:
  HierarchicalCollective(int local_workers, ProcessGroup& processes);
  int size() const override { return local_.size(); }
  std::string name() const override;
  void all_reduce_sum(int rank, float* data, std::size_t n) override;
  void broadcast(int rank, float* data, std::size_t n, int root) override;
  void barrier(int rank) override;
  void abort() override { local_.abort(); }

 private:
  ThreadCollective local_;
  ProcessGroup& processes_;
};

// The collective for `local_workers` threads in this process and the processes of `processes`:
// LocalCollective, ThreadCollective or HierarchicalCollective, whichever is the simplest fit.
std::unique_ptr<Collective> make_host_collective(int local_workers, ProcessGroup& processes);

}  // namespace dl
