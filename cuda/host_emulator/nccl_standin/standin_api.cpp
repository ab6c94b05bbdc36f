// The stand-in NCCL's API (include/nccl.h): communicators, groups, collectives and their errors.
// Where NCCL leaves misuse undefined (a freed handle, two threads in one communicator, a new call
// on a nonblocking communicator before its ncclInProgress was polled away) the stand-in answers
// ncclInvalidUsage or ncclInvalidArgument and says why, so the collective's tests catch it.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "standin.hpp"

namespace {

using dl::nccl_standin::Collective;
using Comms = std::vector<std::shared_ptr<ncclComm>>;

// How often a blocking call looks at its peers' progress.
constexpr auto kPoll = std::chrono::microseconds(100);
// After the random bytes that name the segment: marks an id made by ncclGetUniqueId, so that an
// id that was never broadcast (all zeros) is refused rather than joining a stranger.
constexpr std::size_t kIdRandomBytes = 24;
constexpr char kIdMagic[] = "dlstndin";

std::mutex registry_mutex;
std::map<ncclComm*, std::shared_ptr<ncclComm>> registry;
thread_local std::string thread_error;  // ncclGetLastError without a live communicator

// The calling thread's open group (ncclGroupStart .. ncclGroupEnd).
struct Group {
  int depth = 0;
  Comms inits, finalizes, releases;
  ncclResult_t failed = ncclSuccess;  // the first call inside it that failed
};
thread_local Group group;

ncclResult_t fail(ncclResult_t status, const std::string& text, ncclComm* comm = nullptr) {
  thread_error = "stand-in NCCL: " + text;
  if (comm != nullptr) comm->set_error(thread_error);
  if (group.depth > 0 && group.failed == ncclSuccess) group.failed = status;
  return status;
}

std::shared_ptr<ncclComm> live(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  const auto found = registry.find(comm);
  return found == registry.end() ? nullptr : found->second;
}

ncclResult_t not_live(const char* call) {
  return fail(ncclInvalidArgument, std::string(call) +
                                       ": not a live communicator (freed by ncclCommAbort or "
                                       "ncclCommDestroy, or never made)");
}

// A communicator being called into; NCCL allows one thread at a time in each.
class Entered {
 public:
  explicit Entered(std::shared_ptr<ncclComm> c) : comm(std::move(c)) {
    if (comm != nullptr && !comm->busy.exchange(true)) held_ = &comm->busy;
    alone = held_ != nullptr;
  }
  ~Entered() {
    if (held_ != nullptr) held_->store(false);
  }
  Entered(const Entered&) = delete;
  Entered& operator=(const Entered&) = delete;

  // ncclSuccess when the call may go on; otherwise why not.
  ncclResult_t refusal(const char* call) const {
    if (comm == nullptr) return not_live(call);
    if (!alone) {
      return fail(ncclInvalidUsage,
                  std::string(call) + ": another thread is inside this communicator", comm.get());
    }
    return ncclSuccess;
  }

  std::shared_ptr<ncclComm> comm;
  bool alone = false;

 private:
  std::atomic<bool>* held_ = nullptr;
};

void release(const std::shared_ptr<ncclComm>& comm) {
  comm->aborted = true;  // work still queued (after a failed finalize) quits with the handle
  comm->shm.unlink();
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry.erase(comm.get());
}

// Polls every communicator until none is in progress (aborted ones count as complete) and
// answers the first error, or ncclSuccess; when one of them is nonblocking, polls once and
// answers ncclInProgress if any still is.
ncclResult_t complete_all(const Comms& comms, ncclResult_t (*poll)(ncclComm&)) {
  bool blocking = true;
  for (const auto& c : comms) blocking = blocking && c->blocking;
  for (;;) {
    ncclResult_t status = ncclSuccess;
    bool in_progress = false;
    for (const auto& c : comms) {
      const ncclResult_t s = c->aborted ? ncclSuccess : poll(*c);
      in_progress = in_progress || s == ncclInProgress;
      if (s != ncclSuccess && s != ncclInProgress && status == ncclSuccess) status = s;
    }
    if (!in_progress) return status;
    if (!blocking) return ncclInProgress;
    std::this_thread::sleep_for(kPoll);
  }
}

// NCCL_COMM_BLOCKING, when set, overrides the config (as docs/CUDA.md says NCCL's does).
bool blocking_of(const ncclConfig_t* config) {
  if (const char* env = std::getenv("NCCL_COMM_BLOCKING"); env != nullptr && *env != '\0')
    return std::strcmp(env, "0") != 0;
  return config == nullptr || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
}

ncclResult_t collective(const char* call, const Collective& op, ncclDataType_t type,
                        ncclComm* handle, cudaStream_t stream) {
  const Entered entered(live(handle));
  if (const ncclResult_t refused = entered.refusal(call); refused != ncclSuccess) return refused;
  ncclComm& comm = *entered.comm;
  const std::string name = call;
  if (type != ncclFloat) return fail(ncclInvalidArgument, name + ": floats only", &comm);
  if (op.count > 0 && (op.send == nullptr || op.recv == nullptr))
    return fail(ncclInvalidArgument, name + ": a null buffer", &comm);
  if (op.root >= comm.ranks)
    return fail(ncclInvalidArgument, name + ": root " + std::to_string(op.root), &comm);
  if (!comm.joined_all) return fail(ncclInvalidUsage, name + " before the init completed", &comm);
  if (comm.finalize != ncclComm::Finalize::kNone)
    return fail(ncclInvalidUsage, name + " after ncclCommFinalize", &comm);
  if (comm.in_progress_answers > 0) {
    return fail(ncclInvalidUsage,
                name +
                    " on a nonblocking communicator still in progress (poll "
                    "ncclCommGetAsyncError until it is not)",
                &comm);
  }
  dl::nccl_standin::enqueue_collective(entered.comm, op, stream);
  if (comm.blocking) return ncclSuccess;
  comm.in_progress_answers = 1;  // the enqueue "finishes" at the next poll
  return ncclInProgress;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: null");
  std::memset(id->internal, 0, sizeof(id->internal));
  std::random_device random;
  for (std::size_t i = 0; i < kIdRandomBytes; ++i)
    id->internal[i] = static_cast<char>(random() & 0xff);
  std::memcpy(id->internal + kIdRandomBytes, kIdMagic, sizeof(kIdMagic) - 1);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* handle, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  if (handle == nullptr) return fail(ncclInvalidArgument, "ncclCommInitRank: null handle");
  *handle = nullptr;
  if (nranks < 1 || nranks > dl::nccl_standin::kMaxRanks || rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  }
  if (std::memcmp(id.internal + kIdRandomBytes, kIdMagic, sizeof(kIdMagic) - 1) != 0)
    return fail(ncclInvalidArgument, "ncclCommInitRank: the id is not one ncclGetUniqueId made");
  std::shared_ptr<ncclComm> comm;
  try {
    // The fault first: a rank that cannot start must not leave a segment behind.
    const dl::nccl_standin::Fault fault = dl::nccl_standin::fault_from_environment();
    comm = std::make_shared<ncclComm>(id, nranks, rank);
    comm->fault = fault;
  } catch (const std::exception& e) {
    return fail(ncclSystemError, e.what());
  }
  comm->blocking = blocking_of(config);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry[comm.get()] = comm;
  }
  *handle = comm.get();
  // Once every rank has mapped the segment its name is no longer needed.
  if (comm->shm.header().joined.fetch_add(1) + 1 == nranks) comm->shm.unlink();
  if (group.depth > 0) {
    group.inits.push_back(comm);  // NCCL's grouped init completes in ncclGroupEnd
    return ncclSuccess;
  }
  return complete_all({comm}, dl::nccl_standin::poll_init);
}

ncclResult_t ncclCommInitRank(ncclComm_t* handle, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(handle, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommFinalize(ncclComm_t handle) {
  const Entered entered(live(handle));
  if (const ncclResult_t refused = entered.refusal("ncclCommFinalize"); refused != ncclSuccess)
    return refused;
  if (entered.comm->finalize != ncclComm::Finalize::kNone)
    return fail(ncclInvalidUsage, "ncclCommFinalize called twice", handle);
  dl::nccl_standin::request_finalize(entered.comm);
  if (group.depth > 0) {
    group.finalizes.push_back(entered.comm);
    return ncclSuccess;
  }
  return complete_all({entered.comm}, dl::nccl_standin::poll_finalize);
}

ncclResult_t ncclCommDestroy(ncclComm_t handle) {
  std::shared_ptr<ncclComm> comm;
  {
    const Entered entered(live(handle));
    if (const ncclResult_t refused = entered.refusal("ncclCommDestroy"); refused != ncclSuccess)
      return refused;
    comm = entered.comm;
    // As NCCL's: a communicator not finalized yet is finalized first, which meets the peers.
    if (comm->finalize == ncclComm::Finalize::kNone) dl::nccl_standin::request_finalize(comm);
    while (!comm->aborted && dl::nccl_standin::poll_finalize(*comm) == ncclInProgress)
      std::this_thread::sleep_for(kPoll);
  }
  release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t handle) {
  const Entered entered(live(handle));
  if (const ncclResult_t refused = entered.refusal("ncclCommAbort"); refused != ncclSuccess)
    return refused;
  entered.comm->aborted = true;  // its queued collectives end at their next step
  if (group.depth > 0) {
    group.releases.push_back(entered.comm);
  } else {
    release(entered.comm);
  }
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  const Group done = std::move(group);
  group = Group{};
  // As NCCL's: a group in which a call failed does not run; it answers that call's error at
  // once (its other inits would wait for peers that may never come). Their handles stay live
  // for the caller's ncclCommAbort.
  if (done.failed != ncclSuccess) {
    for (const auto& c : done.releases) release(c);
    return done.failed;
  }
  const ncclResult_t inits = complete_all(done.inits, dl::nccl_standin::poll_init);
  const ncclResult_t finalizes = complete_all(done.finalizes, dl::nccl_standin::poll_finalize);
  for (const auto& c : done.releases) release(c);
  return inits != ncclSuccess ? inits : finalizes;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t handle, ncclResult_t* async) {
  const Entered entered(live(handle));
  if (const ncclResult_t refused = entered.refusal("ncclCommGetAsyncError"); refused != ncclSuccess)
    return refused;
  if (async == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: null", handle);
  ncclComm& comm = *entered.comm;
  *async = dl::nccl_standin::poll_init(comm);
  if (*async != ncclSuccess) return ncclSuccess;
  if (comm.finalize != ncclComm::Finalize::kNone) {
    *async = dl::nccl_standin::poll_finalize(comm);
    return ncclSuccess;
  }
  if (comm.in_progress_answers > 0) {
    --comm.in_progress_answers;
    *async = ncclInProgress;
    return ncclSuccess;
  }
  *async = dl::nccl_standin::refresh_async(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t handle, int* count) {
  const std::shared_ptr<ncclComm> comm = live(handle);
  if (comm == nullptr) return not_live("ncclCommCount");
  *count = comm->ranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t handle, int* rank) {
  const std::shared_ptr<ncclComm> comm = live(handle);
  if (comm == nullptr) return not_live("ncclCommUserRank");
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (op != ncclSum) return fail(ncclInvalidArgument, "ncclAllReduce: ncclSum only", comm);
  return collective("ncclAllReduce",
                    {static_cast<const float*>(send), static_cast<float*>(recv), count, -1}, type,
                    comm, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  if (root < 0) return fail(ncclInvalidArgument, "ncclBroadcast: negative root", comm);
  return collective("ncclBroadcast",
                    {static_cast<const float*>(send), static_cast<float*>(recv), count, root}, type,
                    comm, stream);
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    case ncclNumResults:
      break;
  }
  return "unknown result code";
}

const char* ncclGetLastError(ncclComm_t handle) {
  // NCCL's answer is the calling thread's; a live communicator's own error is more precise.
  if (const std::shared_ptr<ncclComm> comm = live(handle); comm != nullptr) {
    const std::string own = comm->error();
    if (!own.empty()) thread_error = own;
  }
  return thread_error.c_str();
}
