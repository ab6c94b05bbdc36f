// The stand-in NCCL's meeting place (the shared segment), its collectives' rounds, and its fault
// injection (see standin.hpp).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "host_streams.hpp"
#include "standin.hpp"

namespace dl::nccl_standin {

namespace {

std::string segment_name(const ncclUniqueId& id) {
  // The id's first bytes are random (ncclGetUniqueId), so they name the segment.
  static const char kHex[] = "0123456789abcdef";
  std::string name = "/dl-nccl-standin-";
  for (int i = 0; i < 24; ++i) {
    const auto byte = static_cast<unsigned char>(id.internal[i]);
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name;
}

std::size_t segment_bytes(int ranks) {
  const std::size_t r = static_cast<std::size_t>(ranks);
  return sizeof(SharedHeader) + r * sizeof(SharedSlot) + r * kChunkFloats * sizeof(float);
}

[[noreturn]] void system_failure(const std::string& what) {
  throw std::runtime_error("stand-in NCCL: " + what + ": " + std::strerror(errno));
}

}  // namespace

Segment::Segment(const ncclUniqueId& id, int ranks)
    : name_(segment_name(id)), ranks_(ranks), bytes_(segment_bytes(ranks)) {
  // Whoever comes first creates it; a new segment is all zeros, which is every field's start.
  const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) system_failure("shm_open " + name_);
  if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd);
    system_failure("ftruncate " + name_);
  }
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base_ == MAP_FAILED) system_failure("mmap " + name_);
}

Segment::~Segment() {
  munmap(base_, bytes_);
}

SharedHeader& Segment::header() const {
  return *static_cast<SharedHeader*>(base_);
}

SharedSlot& Segment::slot(int rank) const {
  auto* slots = reinterpret_cast<SharedSlot*>(static_cast<char*>(base_) + sizeof(SharedHeader));
  return slots[rank];
}

float* Segment::data(int rank) const {
  auto* first = reinterpret_cast<float*>(static_cast<char*>(base_) + sizeof(SharedHeader) +
                                         static_cast<std::size_t>(ranks_) * sizeof(SharedSlot));
  return first + static_cast<std::size_t>(rank) * kChunkFloats;
}

void Segment::unlink() const {
  (void)shm_unlink(name_.c_str());  // ENOENT: another rank removed it already
}

Fault fault_from_environment() {
  const char* text = std::getenv("DL_NCCL_STANDIN_FAULT");
  Fault fault;
  if (text == nullptr || *text == '\0') return fault;
  std::string rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    const long number = std::strtol(value.c_str(), &end, 10);
    const bool is_number = !value.empty() && *end == '\0';
    if (key == "rank" && is_number) {
      fault.rank = static_cast<int>(number);
    } else if (key == "call" && is_number) {
      fault.call = number;
    } else if (key == "kind" && value == "async_error") {
      fault.kind = Fault::Kind::kAsyncError;
    } else if (key == "kind" && value == "hang") {
      fault.kind = Fault::Kind::kHang;
    } else if (key == "kind" && value == "die") {
      fault.kind = Fault::Kind::kDie;
    } else {
      throw std::invalid_argument("DL_NCCL_STANDIN_FAULT: cannot read \"" + item +
                                  "\" (want rank=R,call=C,kind=async_error|hang|die)");
    }
  }
  if (fault.rank < 0 || fault.call < 1 || fault.kind == Fault::Kind::kNone)
    throw std::invalid_argument(std::string("DL_NCCL_STANDIN_FAULT=\"") + text +
                                "\" needs rank >= 0, call >= 1 and a kind");
  return fault;
}

ncclResult_t refresh_async(ncclComm& comm) {
  const int failed = comm.shm.header().failed_rank.load();
  ncclResult_t none = ncclSuccess;
  if (failed != 0 && failed - 1 != comm.rank &&
      comm.async.compare_exchange_strong(none, ncclRemoteError)) {
    comm.set_error("stand-in NCCL: rank " + std::to_string(failed - 1) +
                   " of the communicator failed (DL_NCCL_STANDIN_FAULT); this is rank " +
                   std::to_string(comm.rank));
  }
  return comm.async;
}

ncclResult_t poll_init(ncclComm& comm) {
  if (!comm.joined_all && comm.shm.header().joined.load() >= comm.ranks) comm.joined_all = true;
  return comm.joined_all ? ncclSuccess : ncclInProgress;
}

void request_finalize(const std::shared_ptr<ncclComm>& comm) {
  comm->finalize = ncclComm::Finalize::kRequested;
  // In the background, as NCCL's proxy does it: the rank's queued work ends first, then it
  // arrives at the meeting, whether or not anyone polls this communicator meanwhile.
  const auto queue = reinterpret_cast<cudaStream_t>(&comm->finalize_queue);
  dl::emu::enqueue(
      queue,
      [comm] {
        if (comm->aborted) return true;
        if (comm->outstanding.load() > 0) return false;
        comm->shm.header().finalized.fetch_add(1);
        comm->finalize = ncclComm::Finalize::kArrived;
        return true;
      },
      false);
}

ncclResult_t poll_finalize(ncclComm& comm) {
  using F = ncclComm::Finalize;
  if (const ncclResult_t async = refresh_async(comm); async != ncclSuccess) return async;
  if (comm.finalize == F::kArrived && comm.shm.header().finalized.load() >= comm.ranks)
    comm.finalize = F::kDone;
  return comm.finalize == F::kDone ? ncclSuccess : ncclInProgress;
}

namespace {

// One rank's part of one collective, as it moves through its rounds on the stream.
struct Rounds {
  std::shared_ptr<ncclComm> comm;
  Collective op;
  std::uint64_t first_round = 0;  // rounds first_round + 1 .. first_round + chunks
  std::size_t chunks = 0;
  std::size_t chunk = 0;
  bool written = false;  // this round's chunk is in the slot
  Fault::Kind fault = Fault::Kind::kNone;

  bool finish() {
    comm->outstanding.fetch_sub(1);
    return true;
  }

  // Every rank's `field` has reached `round`.
  bool everyone(std::atomic<std::uint64_t> SharedSlot::*field, std::uint64_t round) const {
    for (int r = 0; r < comm->ranks; ++r) {
      if ((comm->shm.slot(r).*field).load(std::memory_order_acquire) < round) return false;
    }
    return true;
  }

  void read_round(std::size_t begin, std::size_t length) const {
    const Segment& shm = comm->shm;
    float* out = op.recv + begin;
    if (op.root >= 0) {
      if (comm->rank != op.root || op.recv != op.send)
        std::memcpy(out, shm.data(op.root), length * sizeof(float));
      return;
    }
    for (std::size_t i = 0; i < length; ++i) {
      float sum = shm.data(0)[i];
      for (int r = 1; r < comm->ranks; ++r) sum += shm.data(r)[i];
      out[i] = sum;
    }
  }

  // The stream task: false while a peer has not caught up.
  bool step() {
    if (comm->aborted) return finish();  // NCCL's kernels quit on abort
    if (fault == Fault::Kind::kAsyncError) {
      comm->set_error("stand-in NCCL: injected asynchronous error on rank " +
                      std::to_string(comm->rank) + " (DL_NCCL_STANDIN_FAULT)");
      comm->async = ncclSystemError;
      int none = 0;
      comm->shm.header().failed_rank.compare_exchange_strong(none, comm->rank + 1);
      fault = Fault::Kind::kHang;  // and, like a kernel whose link broke, it never ends
    }
    if (fault == Fault::Kind::kHang) return false;
    for (; chunk < chunks; ++chunk, written = false) {
      const std::uint64_t round = first_round + chunk + 1;
      const std::size_t begin = chunk * kChunkFloats;
      const std::size_t length = std::min(kChunkFloats, op.count - begin);
      if (!written) {
        if (!everyone(&SharedSlot::read, round - 1)) return false;  // a slot is still read
        if (op.root < 0 || op.root == comm->rank)
          std::memcpy(comm->shm.data(comm->rank), op.send + begin, length * sizeof(float));
        comm->shm.slot(comm->rank).written.store(round, std::memory_order_release);
        written = true;
      }
      if (!everyone(&SharedSlot::written, round)) return false;
      read_round(begin, length);
      comm->shm.slot(comm->rank).read.store(round, std::memory_order_release);
    }
    return finish();
  }
};

}  // namespace

void enqueue_collective(const std::shared_ptr<ncclComm>& comm, const Collective& op,
                        cudaStream_t stream) {
  auto rounds = std::make_shared<Rounds>();
  rounds->comm = comm;
  rounds->op = op;
  rounds->chunks = (op.count + kChunkFloats - 1) / kChunkFloats;
  rounds->first_round = comm->next_round;
  comm->next_round += rounds->chunks;
  const Fault& f = comm->fault;
  ++comm->calls;
  if (f.rank == comm->rank && f.call == comm->calls) {
    if (f.kind == Fault::Kind::kDie) ::kill(::getpid(), SIGKILL);
    rounds->fault = f.kind;
  }
  comm->outstanding.fetch_add(1);
  dl::emu::enqueue(stream, [rounds] { return rounds->step(); });
}

}  // namespace dl::nccl_standin

void ncclComm::set_error(const std::string& text) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  last_error_ = text;
}

std::string ncclComm::error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return last_error_;
}
