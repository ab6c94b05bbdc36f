#include "nccl_collective.hpp"

#include <nccl.h>

#include <chrono>
#include <exception>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda_check.hpp"
#include "nccl_check.hpp"
#include "parallel/collective.hpp"

namespace dl::gpu {

namespace {

// How often wait() looks at the event, the abort flag and NCCL's error state. Waits happen at
// sync points, not per kernel, so a short sleep costs nothing measurable and keeps a core free.
constexpr auto kPollInterval = std::chrono::microseconds(50);
// Shown in NCCL's own log lines (NCCL_DEBUG=INFO).
constexpr const char* kCommunicatorName = "dl-train";

// "3 s", or "250 ms" below a second (tests use short timeouts).
std::string timeout_text(std::chrono::milliseconds timeout) {
  if (timeout.count() % 1000 == 0) return fmt::format("{} s", timeout.count() / 1000);
  return fmt::format("{} ms", timeout.count());
}

std::string nccl_failure(const char* what, ncclResult_t status, ncclComm* comm) {
  std::string message = std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(status);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += " (" + std::string(detail) + ")";
  return message;
}

// ncclCommAbort on every local rank, grouped. NCCL treats releasing the ranks of one
// communicator that live in one process as a meeting of those ranks; called one after another
// from one thread, a call may wait for the next one, which never comes. Each call raises its
// communicator's abort flag at once (NCCL's kernels and proxy threads quit); ncclGroupEnd then
// frees them together.
void abort_grouped(const std::vector<ncclComm*>& communicators) {
  (void)ncclGroupStart();
  for (ncclComm* c : communicators) {
    if (c != nullptr) (void)ncclCommAbort(c);
  }
  (void)ncclGroupEnd();
}

}  // namespace

NcclCommunicator::NcclCommunicator(const std::vector<LocalRank>& local, int ranks,
                                   ProcessGroup& processes, std::chrono::milliseconds timeout)
    : local_(local), ranks_(ranks), timeout_(timeout), communicators_(local.size(), nullptr) {
  for (std::size_t r = 0; r < local_.size(); ++r)
    call_mutexes_.push_back(std::make_unique<std::mutex>());
  DL_CHECK(!local_.empty(), "an NCCL communicator needs at least one local rank");
  DL_CHECK(ranks_ >= static_cast<int>(local_.size()), "fewer NCCL ranks than local devices");

  ncclUniqueId id{};
  if (processes.is_root()) DL_NCCL_CALL(ncclGetUniqueId(&id));
  processes.broadcast(&id, sizeof(id), 0);

  // Blocking: calls return once their work is queued (or failed). NCCL_COMM_BLOCKING=0 in the
  // environment overrides this, so every call below also copes with ncclInProgress.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = kCommunicatorName;

  int previous_device = 0;
  DL_CUDA_CALL(cudaGetDevice(&previous_device));
  // The group is always closed, also when a call inside it fails, before anything is reported.
  cudaError_t device_status = cudaSuccess;
  ncclResult_t init_status = ncclSuccess;
  DL_NCCL_CALL(ncclGroupStart());
  for (std::size_t i = 0; i < local_.size(); ++i) {
    device_status = cudaSetDevice(local_[i].device);
    if (device_status != cudaSuccess) break;
    init_status = ncclCommInitRankConfig(&communicators_[i], ranks_, id, local_[i].rank, &config);
    if (init_status != ncclSuccess && init_status != ncclInProgress) break;
  }
  ncclResult_t group_status = ncclGroupEnd();
  (void)cudaSetDevice(previous_device);
  if (group_status == ncclInProgress) {
    group_status = ncclSuccess;
    for (std::size_t i = 0; i < local_.size() && group_status == ncclSuccess; ++i) {
      if (communicators_[i] != nullptr) group_status = settle(i, ncclInProgress);
    }
  }

  const ncclResult_t failed =
      init_status != ncclSuccess && init_status != ncclInProgress ? init_status : group_status;
  if (device_status != cudaSuccess || failed != ncclSuccess) {
    abort_grouped(communicators_);
    DL_CUDA_CALL(device_status);
    throw Error(ExitCode::kFailure,
                nccl_failure(("setting up one communicator over " + std::to_string(ranks_) +
                              " GPU(s) of " + std::to_string(processes.size()) + " process(es)")
                                 .c_str(),
                             failed, nullptr) +
                    "; run with NCCL_DEBUG=WARN to see NCCL's reason, check that every process "
                    "sees its GPUs and that the machines reach each other (NCCL_SOCKET_IFNAME)");
  }
}

NcclCommunicator::~NcclCommunicator() {
  if (aborted_) return;  // ncclCommAbort freed the communicators already
  // Destroyed while an exception unwinds the stack (a failure outside the collective's calls):
  // the other processes may be waiting in a collective this one will never join, and a normal
  // release waits for the ranks on this machine. Abort instead, so that the error reaches
  // ProcessGroup::abort_job. Errors cannot be reported from a destructor.
  if (std::uncaught_exceptions() > 0) {
    abort_grouped(communicators_);
    return;
  }
  int previous_device = 0;
  const bool restore = cudaGetDevice(&previous_device) == cudaSuccess;
  // ncclCommFinalize (which ncclCommDestroy calls itself when it was not called) waits for every
  // rank of this machine, this process's other local ranks included: one after another from this
  // thread, the first would wait for the second for ever, so they are finalized in one group.
  // ncclCommDestroy is then purely local.
  (void)ncclGroupStart();
  for (ncclComm* c : communicators_) {
    if (c != nullptr) (void)ncclCommFinalize(c);
  }
  const ncclResult_t group_status = ncclGroupEnd();
  bool finalized = group_status == ncclSuccess || group_status == ncclInProgress;
  // A nonblocking communicator (NCCL_COMM_BLOCKING=0) finalizes in the background.
  for (ncclComm* c : communicators_) {
    if (c == nullptr || !finalized) continue;
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      if (ncclCommGetAsyncError(c, &state) != ncclSuccess) state = ncclInternalError;
      if (state == ncclInProgress) std::this_thread::sleep_for(kPollInterval);
    }
    finalized = state == ncclSuccess;
  }
  if (!finalized) {
    abort_grouped(communicators_);
  } else {
    for (ncclComm* c : communicators_) {
      if (c != nullptr) (void)ncclCommDestroy(c);
    }
  }
  if (restore) (void)cudaSetDevice(previous_device);
}

ncclComm* NcclCommunicator::communicator(int local) const {
  DL_CHECK(local >= 0 && local < local_ranks(), "NCCL local rank " + std::to_string(local) +
                                                    " outside [0, " +
                                                    std::to_string(local_ranks()) + ")");
  return communicators_[static_cast<std::size_t>(local)];
}

void NcclCommunicator::throw_if_aborted() const {
  if (aborted_) throw CollectiveAborted();
}

ncclResult_t NcclCommunicator::query_async_error(std::size_t local, ncclResult_t* async) const {
  return call_locked(local, [&](ncclComm* comm) { return ncclCommGetAsyncError(comm, async); });
}

std::string NcclCommunicator::failure(std::size_t local, const char* what,
                                      ncclResult_t status) const {
  std::string message;
  call_locked(local, [&](ncclComm* comm) {
    message = nccl_failure(what, status, comm);
    return ncclSuccess;
  });
  return message;
}

ncclResult_t NcclCommunicator::settle(std::size_t local, ncclResult_t status) const {
  while (status == ncclInProgress) {
    throw_if_aborted();
    std::this_thread::sleep_for(kPollInterval);
    const ncclResult_t query = query_async_error(local, &status);
    if (query != ncclSuccess) return query;
  }
  return status;
}

void NcclCommunicator::check_async_error(int local) const {
  throw_if_aborted();
  communicator(local);  // checks the index
  const auto rank = static_cast<std::size_t>(local);
  ncclResult_t async = ncclSuccess;
  const ncclResult_t status = query_async_error(rank, &async);
  throw_if_aborted();
  if (status != ncclSuccess)
    throw Error(ExitCode::kFailure, failure(rank, "ncclCommGetAsyncError", status));
  if (async != ncclSuccess && async != ncclInProgress) {
    throw Error(ExitCode::kFailure,
                failure(rank, "a collective on this process's GPU", async) +
                    "; another process or a network link failed: see the other processes' "
                    "errors, or run with NCCL_DEBUG=WARN");
  }
}

void NcclCommunicator::all_reduce_sum(int local, float* data, std::size_t n, cudaStream_t stream) {
  communicator(local);  // checks the index
  const auto rank = static_cast<std::size_t>(local);
  const ncclResult_t status =
      settle(rank, call_locked(rank, [&](ncclComm* comm) {
               return ncclAllReduce(data, data, n, ncclFloat, ncclSum, comm, stream);
             }));
  throw_if_aborted();  // a call that abort() interrupted reports the abort, not its own error
  if (status != ncclSuccess)
    throw Error(ExitCode::kFailure, failure(rank, "ncclAllReduce", status));
  check_async_error(local);
}

void NcclCommunicator::broadcast(int local, float* data, std::size_t n, int root,
                                 cudaStream_t stream) {
  DL_CHECK(root >= 0 && root < ranks_, "NCCL broadcast root " + std::to_string(root) +
                                           " outside [0, " + std::to_string(ranks_) + ")");
  communicator(local);  // checks the index
  const auto rank = static_cast<std::size_t>(local);
  const ncclResult_t status =
      settle(rank, call_locked(rank, [&](ncclComm* comm) {
               return ncclBroadcast(data, data, n, ncclFloat, root, comm, stream);
             }));
  throw_if_aborted();
  if (status != ncclSuccess)
    throw Error(ExitCode::kFailure, failure(rank, "ncclBroadcast", status));
  check_async_error(local);
}

void NcclCommunicator::wait(int local, cudaEvent_t event) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    throw_if_aborted();
    const cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess) return;
    if (state == cudaErrorNotReady) {
      // Not an error, but the runtime may keep it as the thread's last error, which the next
      // kernel launch check would then report as its own failure.
      (void)cudaGetLastError();
    } else {
      throw_if_aborted();  // kernels ended by ncclCommAbort may leave an error behind
      DL_CUDA_CALL(state);
    }
    check_async_error(local);
    if (timeout_.count() > 0 && std::chrono::steady_clock::now() - start > timeout_) {
      throw Error(ExitCode::kFailure,
                  fmt::format("NCCL rank {}: a collective has waited {} (parallel.timeout) for the "
                              "other ranks of the job: one of them is stopped, hangs (a stuck "
                              "file system, a lost link) or died unnoticed; ending the job. Raise "
                              "parallel.timeout if a rank works longer than that between steps",
                              local_[static_cast<std::size_t>(local)].rank,
                              timeout_text(timeout_)));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void NcclCommunicator::abort() {
  // Every rank's call lock, in rank order (no other code holds two): once they are all held no
  // thread is inside an NCCL call on these communicators, and with aborted_ set none enters one.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& m : call_mutexes_) locks.emplace_back(*m);
  if (aborted_.exchange(true)) return;
  int previous_device = 0;
  const bool restore = cudaGetDevice(&previous_device) == cudaSuccess;
  // ncclCommAbort first raises the communicator's abort flag, which NCCL's kernels and proxy
  // threads poll, then frees it; no rank of another process has to take part. The local ranks
  // are released together (see abort_grouped).
  abort_grouped(communicators_);
  if (restore) (void)cudaSetDevice(previous_device);
}

}  // namespace dl::gpu
