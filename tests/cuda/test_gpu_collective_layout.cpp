// The GPU collective's rules that need no GPU (cuda/gpu_collective_layout.hpp): device groups
// and their leaders, the order of the on-device sum, NCCL rank numbering over processes and the
// shared-GPU check. The host meeting point is tested in tests/parallel/test_rendezvous.cpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "gpu_collective_layout.hpp"
#include "parallel/collective.hpp"

namespace {

using dl::gpu::DeviceGroup;

// Worker w on devices[w mod devices.size()], as the CUDA backend registry places them.
std::vector<int> round_robin(int workers, const std::vector<int>& devices) {
  std::vector<int> placed;
  for (int w = 0; w < workers; ++w)
    placed.push_back(devices[static_cast<std::size_t>(w) % devices.size()]);
  return placed;
}

}  // namespace

TEST_CASE("workers sharing a device form one group led by the lowest-numbered worker",
          "[gpu_collective_layout]") {
  const std::vector<DeviceGroup> groups = dl::gpu::group_workers_by_device(round_robin(5, {0, 1}));
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].device == 0);
  CHECK(groups[0].workers == std::vector<int>{0, 2, 4});
  CHECK(groups[0].leader() == 0);
  CHECK(groups[1].device == 1);
  CHECK(groups[1].workers == std::vector<int>{1, 3});
  CHECK(groups[1].leader() == 1);
}

TEST_CASE("groups follow cuda.devices order, and a device listed twice is one group",
          "[gpu_collective_layout]") {
  const std::vector<DeviceGroup> reordered =
      dl::gpu::group_workers_by_device(round_robin(3, {3, 1}));
  REQUIRE(reordered.size() == 2);
  CHECK(reordered[0].device == 3);
  CHECK(reordered[0].workers == std::vector<int>{0, 2});
  CHECK(reordered[1].device == 1);
  CHECK(reordered[1].workers == std::vector<int>{1});

  // cuda.devices: [0, 0] puts both workers on GPU 0: they must be summed on it, not given two
  // NCCL ranks on one GPU.
  const std::vector<DeviceGroup> doubled = dl::gpu::group_workers_by_device(round_robin(2, {0, 0}));
  REQUIRE(doubled.size() == 1);
  CHECK(doubled[0].workers == std::vector<int>{0, 1});
}

TEST_CASE("the on-device sum adds the leader's buffer first, then the others in worker order",
          "[gpu_collective_layout]") {
  const std::vector<DeviceGroup> groups =
      dl::gpu::group_workers_by_device(round_robin(7, {2, 0, 1}));
  for (const DeviceGroup& g : groups) {
    const std::vector<int> order = dl::gpu::summation_order(g);
    REQUIRE(order.size() == g.workers.size());
    CHECK(order.front() == g.leader());
    for (std::size_t i = 1; i < order.size(); ++i) CHECK(order[i - 1] < order[i]);
  }
  CHECK(dl::gpu::summation_order(groups[0]) == std::vector<int>{0, 3, 6});
}

TEST_CASE("NCCL ranks number every process's devices after those of the processes before it",
          "[gpu_collective_layout]") {
  const std::vector<std::uint64_t> counts{2, 1, 3};
  CHECK(dl::gpu::first_nccl_rank(counts, 0) == 0);
  CHECK(dl::gpu::first_nccl_rank(counts, 1) == 2);
  CHECK(dl::gpu::first_nccl_rank(counts, 2) == 3);
  CHECK(dl::gpu::total_nccl_ranks(counts) == 6);

  // Process 2 runs 4 workers on its 3 GPUs: ranks 3, 4, 5 in the order of the group leaders.
  const dl::gpu::GpuCollectiveLayout layout =
      dl::gpu::make_gpu_collective_layout(round_robin(4, {0, 1, 2}), counts, 2);
  CHECK(layout.nccl_ranks == 6);
  CHECK(layout.nccl_rank_of_group(0) == 3);
  CHECK(layout.nccl_rank_of_group(2) == 5);
  CHECK(layout.group_of_worker == std::vector<int>{0, 1, 2, 0});
  CHECK(layout.index_in_group == std::vector<int>{0, 0, 0, 1});
  CHECK(layout.is_leader(0));
  CHECK(layout.is_leader(2));
  CHECK_FALSE(layout.is_leader(3));
  CHECK(layout.group_of(3).device == 0);

  // Every rank of the job is numbered exactly once.
  std::vector<int> seen(static_cast<std::size_t>(dl::gpu::total_nccl_ranks(counts)), 0);
  const std::vector<std::vector<int>> devices_of_process{{0, 1}, {0}, {0, 1, 2}};
  for (int p = 0; p < 3; ++p) {
    const auto l = dl::gpu::make_gpu_collective_layout(
        round_robin(3, devices_of_process[static_cast<std::size_t>(p)]), counts, p);
    for (std::size_t g = 0; g < l.groups.size(); ++g)
      ++seen[static_cast<std::size_t>(l.nccl_rank_of_group(static_cast<int>(g)))];
  }
  CHECK(seen == std::vector<int>(6, 1));
}

TEST_CASE("one process on one device needs no NCCL; a second device or process does",
          "[gpu_collective_layout]") {
  CHECK(dl::gpu::make_gpu_collective_layout(round_robin(3, {0}), {1}, 0).nccl_ranks == 1);
  CHECK(dl::gpu::make_gpu_collective_layout(round_robin(3, {0, 1}), {2}, 0).nccl_ranks == 2);
  CHECK(dl::gpu::make_gpu_collective_layout(round_robin(1, {0}), {1, 1}, 1).nccl_ranks == 2);
}

TEST_CASE("a layout refuses device counts that do not match its own grouping",
          "[gpu_collective_layout]") {
  CHECK_THROWS_AS(dl::gpu::make_gpu_collective_layout(round_robin(2, {0, 1}), {1}, 0),
                  dl::InternalError);
  CHECK_THROWS_AS(dl::gpu::make_gpu_collective_layout(round_robin(2, {0}), {1}, 1),
                  dl::InternalError);
  CHECK_THROWS_AS(dl::gpu::make_gpu_collective_layout({}, {0}, 0), dl::InternalError);
}

TEST_CASE("a broadcast's NCCL root is the device group of the root worker on process 0",
          "[gpu_collective_layout]") {
  const std::vector<int> process0 = {0, 1, 0, 1, 0};
  CHECK(dl::gpu::nccl_root_rank(process0, 0) == 0);
  CHECK(dl::gpu::nccl_root_rank(process0, 3) == 1);
  CHECK(dl::gpu::nccl_root_rank(process0, 4) == 0);
  CHECK_THROWS_AS(dl::gpu::nccl_root_rank(process0, 5), dl::InternalError);
}

TEST_CASE("device keys tell GPUs and machines apart and are never the padding value",
          "[gpu_collective_layout]") {
  const std::uint64_t a = dl::gpu::device_key("node1", "0000:1B:00.0");
  CHECK(a == dl::gpu::device_key("node1", "0000:1B:00.0"));
  CHECK(a != dl::gpu::device_key("node2", "0000:1B:00.0"));
  CHECK(a != dl::gpu::device_key("node1", "0000:1C:00.0"));
  // The separator keeps "ab" + "c" apart from "a" + "bc".
  CHECK(dl::gpu::device_key("ab", "c") != dl::gpu::device_key("a", "bc"));
  CHECK(a != 0);
}

TEST_CASE("two processes using one GPU are found; padding and distinct GPUs are not",
          "[gpu_collective_layout]") {
  const std::uint64_t gpu0 = dl::gpu::device_key("node1", "0000:1B:00.0");
  const std::uint64_t gpu1 = dl::gpu::device_key("node1", "0000:1C:00.0");
  const std::uint64_t other = dl::gpu::device_key("node2", "0000:1B:00.0");

  CHECK_FALSE(dl::gpu::find_shared_device({{gpu0, gpu1}, {other}}).has_value());
  CHECK_FALSE(dl::gpu::find_shared_device({{gpu0, 0}, {gpu1, 0}}).has_value());

  const auto shared = dl::gpu::find_shared_device({{gpu0}, {other}, {gpu1, gpu0}});
  REQUIRE(shared.has_value());
  CHECK(shared->first_process == 0);
  CHECK(shared->first_slot == 0);
  CHECK(shared->second_process == 2);
  CHECK(shared->second_slot == 1);
}
