#include "gpu_collective.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/node_identity.hpp"
#include "cuda_check.hpp"
#include "device_group_sum.hpp"

namespace dl::gpu {

namespace {

// Room for a PCI bus id ("0000:1b:00.0", 13 bytes with the terminator;
// cudaDeviceGetPCIBusId asks for at least that).
constexpr int kPciBusIdBytes = 64;

std::string pci_bus_id(int device) {
  char id[kPciBusIdBytes] = {};
  DL_CUDA_CALL(cudaDeviceGetPCIBusId(id, kPciBusIdBytes, device));
  return id;
}

// Makes `device` current for the calling thread and puts the previous one back on leaving, so
// the constructor and destructor leave the caller's thread as they found it.
class CurrentDevice {
 public:
  CurrentDevice() { DL_CUDA_CALL(cudaGetDevice(&previous_)); }
  ~CurrentDevice() { (void)cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

cudaEvent_t make_event() {
  cudaEvent_t event = nullptr;
  // Ordering only: timing would make every record slower.
  DL_CUDA_CALL(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

}  // namespace

// The hand-off state of one device group. Each field is written by one thread before a meeting
// and read by others after it; the next operation cannot overwrite it before every member has
// left the previous one (a member reaches the next operation's first meeting only after the
// previous operation's second), so one set suffices for every operation.
struct GpuCollective::Group {
  explicit Group(int members)
      : meeting(members),
        buffers(static_cast<std::size_t>(members), nullptr),
        counts(static_cast<std::size_t>(members), 0),
        ready(static_cast<std::size_t>(members), nullptr) {}

  Rendezvous meeting;
  std::vector<float*> buffers;      // each member's buffer of the current operation
  std::vector<std::size_t> counts;  // and its element count, which must agree
  // ready[m] (m >= 1): recorded by member m on its stream just before the first meeting; the
  // leader's stream waits for it before reading or writing member m's buffer, so every op member
  // m queued earlier (the one that wrote the gradients, say) has finished first.
  std::vector<cudaEvent_t> ready;
  // Recorded by the leader on its stream after the last copy into a member's buffer; every other
  // member's stream waits for it before its next op, so none reads its buffer before the result
  // is in it, or writes it while the leader's stream still reads it.
  cudaEvent_t done = nullptr;
  // Recorded by the leader after the NCCL barrier's all-reduce; the leader's thread waits for it
  // on the host (NcclCommunicator::wait), which is what makes barrier() wait for the other GPUs.
  cudaEvent_t barrier_done = nullptr;
  float* barrier_scratch = nullptr;  // one float on the device, the NCCL barrier's payload
};

GpuCollective::GpuCollective(std::vector<GpuParticipant> participants, ProcessGroup& processes,
                             LaunchLimits limits, NcclUse nccl, std::chrono::milliseconds timeout)
    : participants_(std::move(participants)),
      limits_(limits),
      processes_(processes.size()),
      process_rank_(processes.rank()),
      everyone_(std::max<int>(static_cast<int>(participants_.size()), 1)) {
  DL_CHECK(!participants_.empty(), "a GPU collective needs at least one worker");
  std::vector<int> worker_devices;
  for (const GpuParticipant& p : participants_) worker_devices.push_back(p.device);
  const std::uint64_t local_devices = group_workers_by_device(worker_devices).size();

  std::vector<std::uint64_t> devices_per_process{local_devices};
  if (processes_ > 1) {
    // Global worker indices (rank x workers + w) and broadcast roots assume the same number of
    // workers everywhere; the config check makes it so, but a wrong count here would hang NCCL.
    const std::vector<std::uint64_t> workers = processes.all_gather(participants_.size());
    for (std::size_t p = 0; p < workers.size(); ++p) {
      if (workers[p] != participants_.size()) {
        throw ConfigError(fmt::format(
            "parallel.workers: process {} runs {} worker(s) but process {} runs {}; start every "
            "process with the same config",
            p, workers[p], process_rank_, participants_.size()));
      }
    }
    devices_per_process = processes.all_gather(local_devices);
  }
  layout_ = make_gpu_collective_layout(worker_devices, devices_per_process, process_rank_);

  if (nccl == NcclUse::kAlways || layout_.nccl_ranks > 1) {
    if (processes_ > 1) check_no_shared_device(processes, devices_per_process);
    process0_group_of_worker_ = layout_.group_of_worker;
    if (processes_ > 1) {
      std::vector<std::int32_t> wire(process0_group_of_worker_.begin(),
                                     process0_group_of_worker_.end());
      processes.broadcast(wire.data(), wire.size() * sizeof(std::int32_t), 0);
      process0_group_of_worker_.assign(wire.begin(), wire.end());
    }
    std::vector<NcclCommunicator::LocalRank> ranks;
    for (std::size_t g = 0; g < layout_.groups.size(); ++g) {
      ranks.push_back({layout_.groups[g].device, layout_.nccl_rank_of_group(static_cast<int>(g))});
    }
    nccl_ = std::make_unique<NcclCommunicator>(ranks, layout_.nccl_ranks, processes, timeout);
  }

  try {
    create_device_resources();
  } catch (...) {
    release_device_resources();
    throw;
  }
}

GpuCollective::~GpuCollective() {
  // The communicator first: when it has to be aborted (see ~NcclCommunicator), its kernels quit
  // before cudaFree below waits for the device.
  nccl_.reset();
  release_device_resources();
}

void GpuCollective::create_device_resources() {
  CurrentDevice keep;
  for (const DeviceGroup& g : layout_.groups) {
    groups_.push_back(std::make_unique<Group>(static_cast<int>(g.workers.size())));
    Group& group = *groups_.back();
    DL_CUDA_CALL(cudaSetDevice(g.device));
    group.done = make_event();
    for (std::size_t m = 1; m < g.workers.size(); ++m) group.ready[m] = make_event();
    if (nccl_ != nullptr) {
      group.barrier_done = make_event();
      void* scratch = nullptr;
      DL_CUDA_CALL(cudaMalloc(&scratch, sizeof(float)));
      group.barrier_scratch = static_cast<float*>(scratch);
      // On this thread's own stream: a cudaMemset on the legacy default stream would wait for, and
      // hold up, every other stream of the device.
      DL_CUDA_CALL(cudaMemsetAsync(group.barrier_scratch, 0, sizeof(float), cudaStreamPerThread));
      DL_CUDA_CALL(cudaStreamSynchronize(cudaStreamPerThread));
    }
  }
}

void GpuCollective::release_device_resources() {
  // Errors cannot be reported from here; events still pending are released by CUDA once done.
  int previous = 0;
  const bool restore = cudaGetDevice(&previous) == cudaSuccess;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = *groups_[g];
    if (cudaSetDevice(layout_.groups[g].device) != cudaSuccess) continue;
    for (cudaEvent_t e : group.ready) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
    if (group.done != nullptr) (void)cudaEventDestroy(group.done);
    if (group.barrier_done != nullptr) (void)cudaEventDestroy(group.barrier_done);
    if (group.barrier_scratch != nullptr) (void)cudaFree(group.barrier_scratch);
  }
  groups_.clear();
  if (restore) (void)cudaSetDevice(previous);
}

void GpuCollective::check_no_shared_device(
    ProcessGroup& processes, const std::vector<std::uint64_t>& devices_per_process) const {
  // One all_gather per device slot (processes with fewer devices send 0, "none"): every process
  // ends up with the same table and so reaches the same verdict, and all of them stop together.
  // Host name and boot id (or NCCL_HOSTID), as NCCL tells machines apart: containers of two
  // machines that share a host name do not share a GPU.
  const std::string host = node_identity();
  std::vector<std::uint64_t> mine;
  for (const DeviceGroup& g : layout_.groups)
    mine.push_back(device_key(host, pci_bus_id(g.device)));
  const std::uint64_t slots =
      *std::max_element(devices_per_process.begin(), devices_per_process.end());
  std::vector<std::vector<std::uint64_t>> keys(devices_per_process.size());
  for (std::uint64_t s = 0; s < slots; ++s) {
    const std::vector<std::uint64_t> column =
        processes.all_gather(s < mine.size() ? mine[static_cast<std::size_t>(s)] : 0);
    for (std::size_t p = 0; p < keys.size(); ++p) {
      if (s < devices_per_process[p]) keys[p].push_back(column[p]);
    }
  }
  if (const auto shared = find_shared_device(keys)) {
    throw ConfigError(fmt::format(
        "cuda.devices: processes {} and {} run on the same machine and both use one GPU (their "
        "device {} and {} in cuda.devices order), which NCCL refuses; give each process its own "
        "GPUs, e.g. one GPU per process with srun --gpus-per-task=1 or CUDA_VISIBLE_DEVICES set "
        "from the local rank, or run one process per machine with parallel.workers covering "
        "its GPUs",
        shared->first_process, shared->second_process, shared->first_slot, shared->second_slot));
  }
}

std::string GpuCollective::name() const {
  std::string text =
      fmt::format("GPU: {} worker(s) on {} GPU(s), workers sharing a GPU summed on it",
                  participants_.size(), layout_.groups.size());
  if (nccl_ != nullptr) {
    text += fmt::format("; NCCL over {} GPU(s) of {} process(es)", layout_.nccl_ranks, processes_);
  }
  return text;
}

void GpuCollective::check_rank(int rank) const {
  DL_CHECK(rank >= 0 && rank < size(), "GPU collective rank " + std::to_string(rank) +
                                           " outside [0, " + std::to_string(size()) + ")");
}

void GpuCollective::throw_if_aborted() const {
  if (aborted_) throw CollectiveAborted();
}

void GpuCollective::all_reduce_sum(int rank, float* data, std::size_t n) {
  run(Operation::kAllReduce, rank, data, n, 0);
}

void GpuCollective::broadcast(int rank, float* data, std::size_t n, int root) {
  check_rank(root);
  run(Operation::kBroadcast, rank, data, n, root);
}

void GpuCollective::run(Operation op, int rank, float* data, std::size_t n, int root) {
  check_rank(rank);
  throw_if_aborted();
  // Every participant passes the same n, so all of them skip together.
  if (n == 0) return;
  const std::size_t w = static_cast<std::size_t>(rank);
  const int group_index = layout_.group_of_worker[w];
  const int member = layout_.index_in_group[w];
  Group& group = *groups_[static_cast<std::size_t>(group_index)];
  const GpuParticipant& me = participants_[w];
  DL_CUDA_CALL(cudaSetDevice(me.device));

  group.buffers[static_cast<std::size_t>(member)] = data;
  group.counts[static_cast<std::size_t>(member)] = n;
  if (member != 0) {
    DL_CUDA_CALL(cudaEventRecord(group.ready[static_cast<std::size_t>(member)], me.stream));
    group.meeting.arrive();  // the leader now sees this buffer and its `ready` record
    group.meeting.arrive();  // the leader has queued everything and recorded `done`
    DL_CUDA_CALL(cudaStreamWaitEvent(me.stream, group.done, 0));
    return;
  }
  group.meeting.arrive();
  // A leader that fails here leaves the others at the second meeting; the caller's abort() (the
  // trainer aborts on any worker failure) wakes them.
  lead(op, group, group_index, data, n, root);
  group.meeting.arrive();
}

void GpuCollective::lead(Operation op, Group& group, int group_index, float* data, std::size_t n,
                         int root) {
  const DeviceGroup& members = layout_.groups[static_cast<std::size_t>(group_index)];
  const std::size_t count = members.workers.size();
  for (std::size_t m = 1; m < count; ++m) {
    DL_CHECK(group.counts[m] == n,
             fmt::format("workers {} and {} passed {} and {} elements", members.workers[0],
                         members.workers[m], n, group.counts[m]));
  }
  const cudaStream_t stream = participants_[static_cast<std::size_t>(members.leader())].stream;
  for (std::size_t m = 1; m < count; ++m) {
    DL_CUDA_CALL(cudaStreamWaitEvent(stream, group.ready[m], 0));
  }
  const std::size_t bytes = n * sizeof(float);

  // The member whose buffer already holds the result and needs no copy back (none: count).
  std::size_t holds_result = count;
  if (op == Operation::kAllReduce) {
    if (count > 1) {
      std::vector<const float*> sources;
      for (const int worker : summation_order(members)) {
        sources.push_back(group.buffers[static_cast<std::size_t>(
            layout_.index_in_group[static_cast<std::size_t>(worker)])]);
      }
      launch_sum_in_order(data, sources, n, limits_, stream);
    }
    if (nccl_ != nullptr) nccl_->all_reduce_sum(group_index, data, n, stream);
  } else {
    // Process 0's root supplies the value; on other processes the root's buffer is overwritten
    // like everyone else's.
    const bool root_here = process_rank_ == 0 &&
                           layout_.group_of_worker[static_cast<std::size_t>(root)] == group_index;
    if (root_here) {
      holds_result =
          static_cast<std::size_t>(layout_.index_in_group[static_cast<std::size_t>(root)]);
      if (holds_result != 0) {
        DL_CUDA_CALL(cudaMemcpyAsync(data, group.buffers[holds_result], bytes,
                                     cudaMemcpyDeviceToDevice, stream));
      }
    }
    if (nccl_ != nullptr) {
      nccl_->broadcast(group_index, data, n, nccl_root_rank(process0_group_of_worker_, root),
                       stream);
    }
  }
  for (std::size_t m = 1; m < count; ++m) {
    if (m == holds_result) continue;
    DL_CUDA_CALL(cudaMemcpyAsync(group.buffers[m], data, bytes, cudaMemcpyDeviceToDevice, stream));
  }
  if (count > 1) DL_CUDA_CALL(cudaEventRecord(group.done, stream));
}

void GpuCollective::barrier(int rank) {
  check_rank(rank);
  throw_if_aborted();
  everyone_.arrive();
  if (nccl_ == nullptr) return;
  // Across processes: each device leader all-reduces one float and waits for it on the host,
  // which completes only once every GPU of the job has reached this barrier. The second meeting
  // holds the other local workers until then.
  const std::size_t w = static_cast<std::size_t>(rank);
  if (layout_.is_leader(rank)) {
    const int group_index = layout_.group_of_worker[w];
    Group& group = *groups_[static_cast<std::size_t>(group_index)];
    const GpuParticipant& me = participants_[w];
    DL_CUDA_CALL(cudaSetDevice(me.device));
    nccl_->all_reduce_sum(group_index, group.barrier_scratch, 1, me.stream);
    DL_CUDA_CALL(cudaEventRecord(group.barrier_done, me.stream));
    nccl_->wait(group_index, group.barrier_done);
  }
  everyone_.arrive();
}

void GpuCollective::abort() {
  if (aborted_.exchange(true)) return;
  // Host waiters first (cheap and immediate), then the GPUs.
  everyone_.abort();
  for (const auto& group : groups_) group->meeting.abort();
  if (nccl_ != nullptr) nccl_->abort();
}

}  // namespace dl::gpu
