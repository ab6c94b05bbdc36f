// The processes of one job: MPI ranks under mpirun/srun, or a single process. One participant
// per process (the process's worker 0 calls these); threads within a process use the
// ThreadCollective. Which implementation is linked is chosen by the build (mpi feature), not by
// #ifdef: single_process_group.cpp or mpi_process_group.cpp provides make_process_group().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/launcher_env.hpp"

namespace dl {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_root() const { return rank() == 0; }
  virtual std::string name() const = 0;  // "single process", "MPI (OpenMPI 4.1.4), 2 ranks"
  // This process's place among the job's processes on its machine: rank 0 of 1 unless the group
  // knows of others there.
  virtual LocalRank local_rank() const { return {}; }

  // In place, every rank's buffer ends up holding the element-wise sum over ranks.
  virtual void all_reduce_sum(float* data, std::size_t n) = 0;
  virtual void all_reduce_sum(double* data, std::size_t n) = 0;
  // Every rank's buffer ends up holding root's bytes.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  // values[r] = rank r's value, on every rank.
  virtual std::vector<std::uint64_t> all_gather(std::uint64_t value) = 0;
  // On root: result[r] = rank r's bytes (any length); on the other ranks: empty.
  virtual std::vector<std::string> gather(const std::string& bytes, int root) = 0;
  virtual void barrier() = 0;
  // A rank that waits longer than `seconds` (> 0) in one collective ends the job (parallel.timeout);
  // a single process never waits, so it ignores this.
  virtual void set_timeout(std::int64_t /*seconds*/) {}
  // Ends the whole job with `exit_code` (MPI_Abort): a failing rank brings every rank down
  // instead of leaving them blocked in a collective.
  [[noreturn]] virtual void abort_job(int exit_code) = 0;
};

// The process group of this process: MPI when the binary was built with MPI and started by a
// launcher (mpirun, srun: detected from their environment variables), else a single process.
// Call once, early in main(); argc/argv go to MPI_Init.
std::unique_ptr<ProcessGroup> make_process_group(int* argc, char*** argv);

// The trivial group: one process. Always available (tests, and the build without MPI).
std::unique_ptr<ProcessGroup> make_single_process_group();

}  // namespace dl
