// dl::Collective for replicas in GPU memory: workers that share a GPU sum on that GPU, and one
// NCCL communicator spans every GPU of every process of the job.
//
// Layout (gpu_collective_layout.hpp): the local workers on one device form a device group; its
// lowest-numbered worker leads. Per all_reduce_sum:
//  1. every other member records its `ready` event on its own stream (after everything it queued
//     before, the writes of its buffer included) and publishes its buffer pointer;
//  2. the group meets on the host (Rendezvous), so the leader sees every pointer and every
//     `ready` record;
//  3. the leader's stream waits for every `ready` event, sums the buffers in worker order into
//     the leader's buffer (device_group_sum.cu), all-reduces that over NCCL with the other
//     devices' leaders when there are any, copies the result into every member's buffer, and
//     records the group's `done` event;
//  4. the group meets again, and every other member's stream waits for `done` before its next op.
// Only the leader's stream touches the members' buffers, and only between their `ready` and
// `done`, so no buffer is written while another stream still reads it, and nothing waits on the
// host but the meetings. The members get byte copies of the leader's result, and NCCL hands every
// rank the same result, so every replica holds the same bits.
//
// The calls return once their work is queued: "afterwards" in the Collective contract holds in
// each worker's stream order, which is what its next op, a download or synchronize() sees.
// barrier() does wait for the GPUs when NCCL is used (a one-float all-reduce), so that it also
// separates processes.
//
// With one process and one device no NCCL is used (unless NcclUse::kAlways, for tests): the
// device group alone sums. make_collective (collective_registry_cuda.cpp) chooses it; a single
// worker in a single process gets LocalCollective instead.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gpu_collective_layout.hpp"
#include "launch_limits.hpp"
#include "nccl_collective.hpp"
#include "parallel/collective.hpp"
#include "parallel/process_group.hpp"
#include "parallel/rendezvous.hpp"

namespace dl::gpu {

struct GpuParticipant {
  int device = 0;                 // the CUDA device of the worker's backend
  cudaStream_t stream = nullptr;  // the stream its backend's ops run on
};

enum class NcclUse {
  kWhenNeeded,  // only when the job has more than one GPU
  kAlways,      // also over a single GPU (a one-rank communicator): tests of the NCCL path
};

class GpuCollective final : public Collective {
 public:
  // participants[w] is local worker w. Collective over `processes` (every process constructs it
  // at the same point, on the thread that may call MPI): device counts are gathered, the GPUs
  // are checked for being shared between processes, and the NCCL communicator is set up.
  // Throws ConfigError when two processes of one machine would drive the same GPU.
  // `timeout` bounds each wait for the other ranks' NCCL work (NcclCommunicator::wait).
  GpuCollective(std::vector<GpuParticipant> participants, ProcessGroup& processes,
                LaunchLimits limits, NcclUse nccl = NcclUse::kWhenNeeded,
                std::chrono::milliseconds timeout = std::chrono::milliseconds::zero());
  ~GpuCollective() override;
  GpuCollective(const GpuCollective&) = delete;
  GpuCollective& operator=(const GpuCollective&) = delete;

  int size() const override { return static_cast<int>(participants_.size()); }
  std::string name() const override;
  void all_reduce_sum(int rank, float* data, std::size_t n) override;
  // `root` is a local worker index; the value comes from worker `root` of process 0.
  void broadcast(int rank, float* data, std::size_t n, int root) override;
  void barrier(int rank) override;
  // Wakes every worker waiting in a meeting and aborts the NCCL communicator (whose kernels then
  // quit, waking threads that wait on a stream behind them); later calls throw CollectiveAborted.
  void abort() override;

  const GpuCollectiveLayout& layout() const { return layout_; }
  bool uses_nccl() const { return nccl_ != nullptr; }

 private:
  struct Group;
  // What the operation does between the two meetings, on the leader's thread and stream.
  enum class Operation { kAllReduce, kBroadcast };

  void check_rank(int rank) const;
  void throw_if_aborted() const;
  void run(Operation op, int rank, float* data, std::size_t n, int root);
  void lead(Operation op, Group& group, int group_index, float* data, std::size_t n, int root);
  void check_no_shared_device(ProcessGroup& processes,
                              const std::vector<std::uint64_t>& devices_per_process) const;
  void create_device_resources();
  void release_device_resources();

  std::vector<GpuParticipant> participants_;
  LaunchLimits limits_;
  int processes_ = 1;
  int process_rank_ = 0;
  GpuCollectiveLayout layout_;
  // Process 0's group index of each local worker: the NCCL root of a broadcast.
  std::vector<int> process0_group_of_worker_;
  std::vector<std::unique_ptr<Group>> groups_;
  Rendezvous everyone_;  // all local workers, for barrier()
  std::unique_ptr<NcclCommunicator> nccl_;
  std::atomic<bool> aborted_{false};
};

}  // namespace dl::gpu
