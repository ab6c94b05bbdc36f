// The stand-in NCCL's insides (include/nccl.h is its API). Ranks of one communicator meet in a
// POSIX shared-memory segment named after the unique id, so ranks in different processes and
// ranks in one process meet the same way. Each collective is cut into rounds of at most
// kChunkFloats elements; in a round every rank puts its chunk in its own slot of the segment,
// waits until every rank has, and reads them all (an all-reduce adds them in rank order, so
// every rank gets the same bits; a broadcast copies the root's). A slot is refilled only once
// every rank has read the round before. The work runs as host stream tasks (host_streams.hpp):
// a collective completes when every rank has joined it, and a rank whose peer never comes waits
// until ncclCommAbort, as NCCL's kernels do.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nccl.h>

namespace dl::nccl_standin {

constexpr int kMaxRanks = 64;
constexpr std::size_t kChunkFloats = std::size_t{1} << 14;

// Shared between processes: lock-free atomics only, all zero in a new segment. Each on a cache
// line of its own: the 64-bit counters must be aligned to be atomic at all (the header alone is
// 12 bytes), and ranks polling one slot should not slow the writer of the next.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
constexpr std::size_t kCacheLine = 64;
struct alignas(kCacheLine) SharedHeader {
  std::atomic<std::int32_t> joined;       // ranks that have called ncclCommInitRank
  std::atomic<std::int32_t> failed_rank;  // 1 + the first rank with an asynchronous error
  std::atomic<std::int32_t> finalized;    // ranks that reached ncclCommFinalize, work done
};
struct alignas(kCacheLine) SharedSlot {
  std::atomic<std::uint64_t> written;  // the last round whose chunk this rank put in its slot
  std::atomic<std::uint64_t> read;     // the last round in which this rank read every slot
};

// One rank's mapping of its communicator's segment.
class Segment {
 public:
  // Opens (creating it when this rank is the first) the segment of `id` for `ranks` ranks.
  // Throws std::runtime_error with the system's reason when that fails.
  Segment(const ncclUniqueId& id, int ranks);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  SharedHeader& header() const;
  SharedSlot& slot(int rank) const;
  float* data(int rank) const;  // kChunkFloats floats
  // Removes the name (the mappings stay valid): once every rank has mapped it, or on release.
  void unlink() const;

 private:
  std::string name_;
  int ranks_ = 0;
  std::size_t bytes_ = 0;
  void* base_ = nullptr;
};

// DL_NCCL_STANDIN_FAULT="rank=R,call=C,kind=K": NCCL rank R's C-th collective (1-based, counted
// per communicator) fails: async_error (its communicator reports ncclSystemError once the call
// has started, every other rank ncclRemoteError, and the collective never completes), hang
// (it never completes) or die (the process kills itself with SIGKILL at the call).
struct Fault {
  enum class Kind { kNone, kAsyncError, kHang, kDie };
  int rank = -1;
  long call = 0;
  Kind kind = Kind::kNone;
};
// Empty (Kind::kNone) when the variable is unset; throws std::invalid_argument naming what is
// wrong with a value it cannot read.
Fault fault_from_environment();

}  // namespace dl::nccl_standin

// One rank's communicator. The handle NCCL returns points at this; a queued collective holds a
// shared_ptr, so ncclCommAbort can release the handle while the work still ends.
struct ncclComm : std::enable_shared_from_this<ncclComm> {
  enum class Finalize { kNone, kRequested, kArrived, kDone };

  ncclComm(const ncclUniqueId& id, int count, int my_rank)
      : ranks(count), rank(my_rank), shm(id, count) {}

  const int ranks;
  const int rank;
  const dl::nccl_standin::Segment shm;
  bool blocking = true;
  dl::nccl_standin::Fault fault;

  std::atomic<bool> aborted{false};
  std::atomic<bool> busy{false};        // a thread is inside an API call on it
  std::atomic<bool> joined_all{false};  // every rank has joined: the init is complete
  std::atomic<Finalize> finalize{Finalize::kNone};
  std::atomic<int> outstanding{0};          // collectives queued and not finished
  std::atomic<int> in_progress_answers{0};  // nonblocking: polls that still say ncclInProgress
  std::atomic<ncclResult_t> async{ncclSuccess};
  char finalize_queue = 0;  // its address names the host stream its finalize runs on

  // Touched only by the one thread calling into this communicator (NCCL's rule).
  std::uint64_t next_round = 0;
  long calls = 0;

  void set_error(const std::string& text);
  std::string error() const;

 private:
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

namespace dl::nccl_standin {

// One collective: an all-reduce (root < 0) or a broadcast from `root`.
struct Collective {
  const float* send = nullptr;
  float* recv = nullptr;
  std::size_t count = 0;
  int root = -1;
};

// Counts the call, applies a fault meant for it, and queues the collective's rounds on `stream`.
void enqueue_collective(const std::shared_ptr<ncclComm>& comm, const Collective& op,
                        cudaStream_t stream);

// The communicator's asynchronous error: its own, or ncclRemoteError once another rank has
// failed (as a lost connection reaches every peer in NCCL).
ncclResult_t refresh_async(ncclComm& comm);
// Starts the communicator's finalize (see poll_finalize).
void request_finalize(const std::shared_ptr<ncclComm>& comm);
// Non-blocking progress of a communicator's set-up and finalize: ncclSuccess once complete,
// ncclInProgress until then. A finalize answers the communicator's asynchronous error instead,
// as NCCL's does: its queued work would never end, so neither would the meeting.
ncclResult_t poll_init(ncclComm& comm);
ncclResult_t poll_finalize(ncclComm& comm);

}  // namespace dl::nccl_standin
