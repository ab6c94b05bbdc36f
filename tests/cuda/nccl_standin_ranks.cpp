// One MPI rank of the GPU collective on the host (tests/cuda/nccl_standin_mpi.sh runs it under
// mpirun): the NCCL unique id travels over MPI (the project's MpiProcessGroup) and the ranks of
// different processes meet in the stand-in NCCL's shared memory.
//
//   nccl_standin_ranks nccl   NcclCommunicator: all-reduces and broadcasts against naive sums
//   nccl_standin_ranks gpu    GpuCollective, one worker per process on device = rank
//   nccl_standin_ranks fail   keeps all-reducing; meant to run with DL_NCCL_STANDIN_FAULT
//
// Prints "rank R: ok ..." on success. Any failure is handled as dl-train's main does: the error
// with the rank, then ProcessGroup::abort_job, so one failing rank ends the job.
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu_collective.hpp"
#include "nccl_collective.hpp"
#include "nccl_standin_support.hpp"
#include "parallel/process_group.hpp"

namespace {

constexpr int kRounds = 3;
// "fail" mode all-reduces up to this often; the fault stops it much earlier.
constexpr int kFailRounds = 1000;

std::vector<float> sum_over(int ranks, int round) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(dl::test::rank_values(r, round));
  return dl::test::naive_sum(inputs);
}

void expect(bool good, const std::string& what) {
  if (!good) throw dl::Error(dl::ExitCode::kFailure, what + " differs from the naive result");
}

void run_nccl(dl::ProcessGroup& processes, int rounds, bool check) {
  const int rank = processes.rank();
  // The buffer outlives the communicator: cudaFree waits for the device, which a collective
  // left behind by a failure keeps busy until the communicator's abort (as the trainer orders
  // them: collective first, then the backends' memory).
  dl::test::RankBuffer b;
  dl::gpu::NcclCommunicator comm({{rank, rank}}, processes.size(), processes);
  for (int round = 0; round < rounds; ++round) {
    b.upload(dl::test::rank_values(rank, round));
    comm.all_reduce_sum(0, b.data, b.n, b.stream);
    DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
    comm.wait(0, b.done);
    if (check) expect(b.download() == sum_over(processes.size(), round), "the all-reduce");
    b.upload(dl::test::rank_values(rank, round + 100));
    comm.broadcast(0, b.data, b.n, 0, b.stream);
    DL_CUDA_CALL(cudaEventRecord(b.done, b.stream));
    comm.wait(0, b.done);
    if (check) expect(b.download() == dl::test::rank_values(0, round + 100), "the broadcast");
  }
}

void run_gpu(dl::ProcessGroup& processes) {
  const int rank = processes.rank();
  DL_CUDA_CALL(cudaSetDevice(rank));
  dl::test::RankBuffer b;
  dl::gpu::GpuCollective collective({{rank, b.stream}}, processes, dl::gpu::LaunchLimits{});
  std::cout << "rank " << rank << ": " << collective.name() << "\n";
  for (int round = 0; round < kRounds; ++round) {
    b.upload(dl::test::rank_values(rank, round));
    collective.all_reduce_sum(0, b.data, b.n);
    expect(b.download() == sum_over(processes.size(), round), "the GpuCollective all-reduce");
    b.upload(dl::test::rank_values(rank, round + 100));
    collective.broadcast(0, b.data, b.n, 0);
    expect(b.download() == dl::test::rank_values(0, round + 100), "the GpuCollective broadcast");
    collective.barrier(0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<dl::ProcessGroup> processes;
  try {
    processes = dl::make_process_group(&argc, &argv);
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "nccl") {
      run_nccl(*processes, kRounds, true);
    } else if (mode == "gpu") {
      run_gpu(*processes);
    } else if (mode == "fail") {
      run_nccl(*processes, kFailRounds, false);
    } else {
      std::cerr << "usage: nccl_standin_ranks nccl|gpu|fail\n";
      return 2;
    }
    std::cout << "rank " << processes->rank() << ": ok " << mode << " over " << processes->size()
              << " process(es)\n";
    return 0;
  } catch (const std::exception& e) {
    const int rank = processes != nullptr ? processes->rank() : -1;
    std::cerr << "nccl_standin_ranks: rank " << rank << ": error: " << e.what() << std::endl;
    if (processes != nullptr && processes->size() > 1) processes->abort_job(1);
    return 1;
  }
}
