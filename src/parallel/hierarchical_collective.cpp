#include "parallel/hierarchical_collective.hpp"

namespace dl {

HierarchicalCollective::HierarchicalCollective(int local_workers, ProcessGroup& processes)
    : local_(local_workers), processes_(processes) {}

std::string HierarchicalCollective::name() const {
  return "threads within a process, " + processes_.name() + " between processes";
}

void HierarchicalCollective::all_reduce_sum(int rank, float* data, std::size_t n) {
  local_.all_reduce_sum(rank, data, n);
  if (rank == 0) processes_.all_reduce_sum(data, n);
  // The local sums were identical; only worker 0's buffer holds the global sum now.
  local_.broadcast(rank, data, n, 0);
}

void HierarchicalCollective::broadcast(int rank, float* data, std::size_t n, int root) {
  // `root` is a local worker index on every process; the value comes from process 0's root.
  local_.broadcast(rank, data, n, root);
  if (rank == 0) processes_.broadcast(data, n * sizeof(float), 0);
  local_.broadcast(rank, data, n, 0);
}

void HierarchicalCollective::barrier(int rank) {
  local_.barrier(rank);
  if (rank == 0) processes_.barrier();
  local_.barrier(rank);
}

std::unique_ptr<Collective> make_host_collective(int local_workers, ProcessGroup& processes) {
  if (processes.size() > 1)
    return std::make_unique<HierarchicalCollective>(local_workers, processes);
  if (local_workers > 1) return std::make_unique<ThreadCollective>(local_workers);
  return std::make_unique<LocalCollective>();
}

}  // namespace dl
