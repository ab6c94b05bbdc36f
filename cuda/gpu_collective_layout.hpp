// Who does what in the GPU collective (gpu_collective.hpp), decided without touching a GPU so that
// it is tested on any machine:
//  - which local workers share a device (worker w runs where its backend runs; the registry puts
//    it on devices[w mod devices.size()]);
//  - which of them leads its device: the lowest-numbered worker, which sums the others' buffers
//    on its stream and alone talks to NCCL;
//  - the order of that sum: worker order, (b[w0] + b[w1]) + b[w2] ... (the CPU collectives add
//    in a tree instead, src/parallel/sum_order.hpp; a GPU matches the CPU to rounding only);
//  - the NCCL rank of each local device in the one communicator over every GPU of every process:
//    process p's devices follow all devices of processes 0 .. p-1, in the order of their leaders;
//  - whether two processes of the job would drive the same GPU, which NCCL refuses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dl::gpu {

// The local workers on one device, in ascending order; workers.front() leads.
struct DeviceGroup {
  int device = 0;  // CUDA device ordinal
  std::vector<int> workers;
  int leader() const { return workers.front(); }
};

struct GpuCollectiveLayout {
  std::vector<DeviceGroup> groups;   // in the order of their leaders
  std::vector<int> group_of_worker;  // local worker -> index into groups
  std::vector<int> index_in_group;   // local worker -> position in its group's workers
  int first_nccl_rank = 0;           // NCCL rank of groups[0]; groups[g] has first + g
  int nccl_ranks = 1;                // GPUs over all processes: the communicator's size

  int workers() const { return static_cast<int>(group_of_worker.size()); }
  bool is_leader(int worker) const;
  const DeviceGroup& group_of(int worker) const;
  int nccl_rank_of_group(int group) const { return first_nccl_rank + group; }
};

// Groups local workers by the device each runs on (`worker_devices[w]`, a CUDA ordinal). Two
// entries with the same ordinal share a group even when cuda.devices listed it twice.
std::vector<DeviceGroup> group_workers_by_device(const std::vector<int>& worker_devices);

// The NCCL rank of process `process`'s first device when process p drives
// `devices_per_process[p]` devices; and the communicator's size (their sum).
int first_nccl_rank(const std::vector<std::uint64_t>& devices_per_process, int process);
int total_nccl_ranks(const std::vector<std::uint64_t>& devices_per_process);

// The whole layout of process `process`. `devices_per_process[process]` must equal the number of
// distinct devices in `worker_devices` (the caller gathered it from this very grouping).
GpuCollectiveLayout make_gpu_collective_layout(
    const std::vector<int>& worker_devices, const std::vector<std::uint64_t>& devices_per_process,
    int process);

// The buffers of a device group in the order they are added: the leader's first, then the
// others in worker order. The result is the same bits on every device that sums the same values.
std::vector<int> summation_order(const DeviceGroup& group);

// A broadcast's value comes from local worker `root` of process 0, whose NCCL rank is the index
// of root's device group there (process 0's devices have the first NCCL ranks).
int nccl_root_rank(const std::vector<int>& process0_group_of_worker, int root);

// A number naming one GPU of one machine: its host name and PCI bus id hashed (FNV-1a), never 0
// (0 pads the exchange for processes with fewer devices).
std::uint64_t device_key(const std::string& host, const std::string& pci_bus_id);

// Two processes that would drive the same GPU: keys[p] lists process p's device keys.
struct SharedDevice {
  int first_process = 0;
  int first_slot = 0;  // position in that process's device groups
  int second_process = 0;
  int second_slot = 0;
};
std::optional<SharedDevice> find_shared_device(const std::vector<std::vector<std::uint64_t>>& keys);

}  // namespace dl::gpu
