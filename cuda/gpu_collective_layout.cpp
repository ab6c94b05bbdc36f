#include "gpu_collective_layout.hpp"

#include <map>
#include <utility>

#include "core/error.hpp"
#include "core/hash.hpp"

namespace dl::gpu {

namespace {

constexpr char kKeySeparator = '/';
constexpr std::uint64_t kNoDevice = 0;

}  // namespace

bool GpuCollectiveLayout::is_leader(int worker) const {
  return group_of(worker).leader() == worker;
}

const DeviceGroup& GpuCollectiveLayout::group_of(int worker) const {
  DL_CHECK(worker >= 0 && worker < workers(),
           "worker " + std::to_string(worker) + " outside [0, " + std::to_string(workers()) + ")");
  return groups[static_cast<std::size_t>(group_of_worker[static_cast<std::size_t>(worker)])];
}

std::vector<DeviceGroup> group_workers_by_device(const std::vector<int>& worker_devices) {
  std::vector<DeviceGroup> groups;
  std::map<int, std::size_t> group_of_device;
  for (std::size_t w = 0; w < worker_devices.size(); ++w) {
    const int device = worker_devices[w];
    const auto found = group_of_device.find(device);
    if (found == group_of_device.end()) {
      group_of_device.emplace(device, groups.size());
      groups.push_back(DeviceGroup{device, {static_cast<int>(w)}});
    } else {
      groups[found->second].workers.push_back(static_cast<int>(w));
    }
  }
  return groups;
}

int first_nccl_rank(const std::vector<std::uint64_t>& devices_per_process, int process) {
  DL_CHECK(process >= 0 && static_cast<std::size_t>(process) < devices_per_process.size(),
           "process " + std::to_string(process) + " outside the gathered device counts");
  std::uint64_t first = 0;
  for (int p = 0; p < process; ++p) first += devices_per_process[static_cast<std::size_t>(p)];
  return static_cast<int>(first);
}

int total_nccl_ranks(const std::vector<std::uint64_t>& devices_per_process) {
  std::uint64_t total = 0;
  for (const std::uint64_t d : devices_per_process) total += d;
  return static_cast<int>(total);
}

GpuCollectiveLayout make_gpu_collective_layout(
    const std::vector<int>& worker_devices, const std::vector<std::uint64_t>& devices_per_process,
    int process) {
  DL_CHECK(!worker_devices.empty(), "a GPU collective needs at least one worker");
  GpuCollectiveLayout layout;
  layout.groups = group_workers_by_device(worker_devices);
  DL_CHECK(process >= 0 && static_cast<std::size_t>(process) < devices_per_process.size() &&
               devices_per_process[static_cast<std::size_t>(process)] == layout.groups.size(),
           "the gathered device count of process " + std::to_string(process) +
               " differs from its own grouping");
  layout.group_of_worker.assign(worker_devices.size(), 0);
  layout.index_in_group.assign(worker_devices.size(), 0);
  for (std::size_t g = 0; g < layout.groups.size(); ++g) {
    const std::vector<int>& members = layout.groups[g].workers;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::size_t w = static_cast<std::size_t>(members[i]);
      layout.group_of_worker[w] = static_cast<int>(g);
      layout.index_in_group[w] = static_cast<int>(i);
    }
  }
  layout.first_nccl_rank = first_nccl_rank(devices_per_process, process);
  layout.nccl_ranks = total_nccl_ranks(devices_per_process);
  return layout;
}

std::vector<int> summation_order(const DeviceGroup& group) {
  // group_workers_by_device adds workers in ascending order, so the leader is first already.
  return group.workers;
}

int nccl_root_rank(const std::vector<int>& process0_group_of_worker, int root) {
  DL_CHECK(root >= 0 && static_cast<std::size_t>(root) < process0_group_of_worker.size(),
           "broadcast root " + std::to_string(root) + " is not a worker of process 0");
  return process0_group_of_worker[static_cast<std::size_t>(root)];
}

std::uint64_t device_key(const std::string& host, const std::string& pci_bus_id) {
  // core/hash.hpp: the same input gives the same number in every process of the job.
  const std::uint64_t hash = fnv1a(pci_bus_id, fnv1a(host + kKeySeparator));
  return hash == kNoDevice ? hash + 1 : hash;
}

std::optional<SharedDevice> find_shared_device(
    const std::vector<std::vector<std::uint64_t>>& keys) {
  std::map<std::uint64_t, std::pair<int, int>> first_user;  // key -> (process, slot)
  for (std::size_t p = 0; p < keys.size(); ++p) {
    for (std::size_t s = 0; s < keys[p].size(); ++s) {
      const std::uint64_t key = keys[p][s];
      if (key == kNoDevice) continue;
      const auto [found, inserted] =
          first_user.emplace(key, std::make_pair(static_cast<int>(p), static_cast<int>(s)));
      if (!inserted) {
        return SharedDevice{found->second.first, found->second.second, static_cast<int>(p),
                            static_cast<int>(s)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace dl::gpu
