// The NCCL part of the GPU collective (gpu_collective.hpp): one communicator over every GPU of
// every process of the job, of which this process holds one rank per local device.
//
// Set-up is collective over the ProcessGroup (every process constructs it at the same point,
// from the thread that may call MPI): process 0 calls ncclGetUniqueId, ProcessGroup::broadcast
// hands the id to the others, and each process creates its ranks inside one
// ncclGroupStart/ncclGroupEnd, because ncclCommInitRank waits for the other ranks and one thread
// creates them all.
//
// Operations are queued on the caller's stream and return without waiting for the GPU. Each
// local rank is driven by one thread at a time (its device group's leader); different local
// ranks may be driven from different threads, which NCCL allows for distinct ncclComm_t.
//
// NCCL refuses two ranks on one GPU, within a process or across processes of one machine: the
// GPU collective sums workers that share a device before they reach NCCL, and checks across
// processes before creating the communicator.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/process_group.hpp"

#include <nccl.h>

namespace dl::gpu {

class NcclCommunicator {
 public:
  struct LocalRank {
    int device = 0;  // CUDA device ordinal
    int rank = 0;    // NCCL rank in the job-wide communicator
  };

  // Collective over `processes`: every process calls it with its own ranks; `ranks` is the
  // communicator's size over all processes. Throws dl::Error when NCCL cannot set it up.
  // `timeout` (parallel.timeout; zero: none) bounds each wait() for the other ranks.
  NcclCommunicator(const std::vector<LocalRank>& local, int ranks, ProcessGroup& processes,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds::zero());
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int ranks() const { return ranks_; }
  int local_ranks() const { return static_cast<int>(local_.size()); }

  // In place on local rank `local`'s device; queued on `stream` (a stream of that device).
  void all_reduce_sum(int local, float* data, std::size_t n, cudaStream_t stream);
  // In place; afterwards every rank's `data` holds NCCL rank `root`'s.
  void broadcast(int local, float* data, std::size_t n, int root, cudaStream_t stream);
  // Blocks until `event` (recorded after this rank's NCCL work) has completed. Polls rather than
  // sleeping in the CUDA runtime, so that abort() ends the wait at once and an asynchronous NCCL
  // error (a peer or a link lost) is reported instead of waiting for ever. A wait longer than
  // the timeout throws (exit 1): a peer that hangs without failing is noticed by neither NCCL nor
  // its kernels, which would spin for ever; the error aborts the collective and ends the job.
  void wait(int local, cudaEvent_t event);

  // ncclCommAbort on every local rank: NCCL kernels still waiting for a peer quit, so every
  // thread waiting on a stream behind them wakes. Later calls throw CollectiveAborted.
  void abort();
  bool aborted() const { return aborted_; }

 private:
  ncclComm* communicator(int local) const;
  void throw_if_aborted() const;
  // A nonblocking communicator (NCCL_COMM_BLOCKING=0) may answer ncclInProgress; NCCL then wants
  // its state polled until it changes before the next call. Returns the final status.
  ncclResult_t settle(std::size_t local, ncclResult_t status) const;
  // Throws when NCCL reports an asynchronous failure on the rank (CollectiveAborted once
  // abort() has run: the abort is the cause, not the failure to report).
  void check_async_error(int local) const;
  // ncclCommGetAsyncError on local rank `local`, or CollectiveAborted once abort() has begun:
  // abort() may run on another thread, and ncclCommAbort frees the communicator.
  ncclResult_t query_async_error(std::size_t local, ncclResult_t* async) const;
  // Runs call(communicator) holding local rank `local`'s call lock; CollectiveAborted once
  // abort() has begun. NCCL allows one thread at a time per communicator, and abort() takes
  // every rank's lock before ncclCommAbort, so it never frees a communicator another thread is
  // inside. The calls made this way only queue work (blocking communicators return once it is
  // queued; nonblocking ones answer ncclInProgress, polled by settle() between locks).
  template <typename Call>
  ncclResult_t call_locked(std::size_t local, Call&& call) const {
    std::lock_guard<std::mutex> lock(*call_mutexes_[local]);
    throw_if_aborted();
    return call(communicators_[local]);
  }
  // The message for a failed call, with NCCL's last error text, read under the rank's lock.
  std::string failure(std::size_t local, const char* what, ncclResult_t status) const;

  std::vector<LocalRank> local_;
  int ranks_ = 0;
  std::chrono::milliseconds timeout_;
  std::vector<ncclComm*> communicators_;
  std::atomic<bool> aborted_{false};
  // One per local rank: held around every NCCL call on that rank's communicator, and by abort()
  // for all of them while it sets aborted_ and releases the communicators. Never held during a
  // wait for another rank.
  std::vector<std::unique_ptr<std::mutex>> call_mutexes_;
};

}  // namespace dl::gpu
