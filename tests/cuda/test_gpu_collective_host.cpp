// GpuCollective (cuda/gpu_collective.cpp) end to end without a GPU: workers on several emulated
// devices, so that device groups sum on their leader's stream (the host grid runs
// device_group_sum.cu) and the leaders all-reduce over the stand-in NCCL; and "processes"
// (threads with a ThreadProcessGroup), so that the set-up exchanges over the process group.
//
// Expected values: a device group adds its members in worker order, NCCL adds the groups in
// rank order (the stand-in's order), so the result is exactly the naive sum in that order.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu_collective.hpp"
#include "nccl_standin_support.hpp"
#include "parallel/collective.hpp"
#include "thread_process_group.hpp"

namespace {

using dl::gpu::GpuCollective;
using dl::gpu::GpuParticipant;
using dl::test::RankBuffer;

// One worker: its buffer and stream on `device`.
struct Worker {
  explicit Worker(int d) : device(d) { DL_CUDA_CALL(cudaSetDevice(device)); }
  int device;
  RankBuffer buffer;
  GpuParticipant participant() const { return {device, buffer.stream}; }
};

std::vector<std::unique_ptr<Worker>> make_workers(const std::vector<int>& devices) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (const int d : devices) workers.push_back(std::make_unique<Worker>(d));
  return workers;
}

std::vector<GpuParticipant> participants(const std::vector<std::unique_ptr<Worker>>& workers) {
  std::vector<GpuParticipant> p;
  for (const auto& w : workers) p.push_back(w->participant());
  return p;
}

// Worker `w` (global index `global`), for each root in turn: all-reduces its values of that
// round, broadcasts from local worker `root`, and meets the others in barrier(); returns both
// results of every round.
std::vector<std::vector<float>> run_worker(GpuCollective& collective, Worker& worker, int w,
                                           int global, const std::vector<int>& roots) {
  std::vector<std::vector<float>> seen;
  RankBuffer& b = worker.buffer;
  DL_CUDA_CALL(cudaSetDevice(worker.device));
  for (std::size_t round = 0; round < roots.size(); ++round) {
    const int r = static_cast<int>(round);
    b.upload(dl::test::rank_values(global, r));
    collective.all_reduce_sum(w, b.data, b.n);
    seen.push_back(b.download());
    b.upload(dl::test::rank_values(global, 100 + r));
    collective.broadcast(w, b.data, b.n, roots[round]);
    seen.push_back(b.download());
    collective.barrier(w);
  }
  return seen;
}

}  // namespace

TEST_CASE("GpuCollective sums device groups on the device and the groups over NCCL",
          "[nccl_host]") {
  // Workers 0 and 2 share device 0 (worker 0 leads), worker 1 is alone on device 1: two NCCL
  // ranks in this process.
  const bool nonblocking = GENERATE(false, true);
  INFO((nonblocking ? "nonblocking" : "blocking"));
  std::unique_ptr<dl::test::ScopedEnv> env;
  if (nonblocking) env = std::make_unique<dl::test::ScopedEnv>("NCCL_COMM_BLOCKING", "0");
  auto workers = make_workers({0, 1, 0});
  auto job = std::make_shared<dl::test::ThreadJob>(1);
  dl::test::ThreadProcessGroup one(job, 0);
  GpuCollective collective(participants(workers), one, dl::gpu::LaunchLimits{3, 100});
  REQUIRE(collective.uses_nccl());
  REQUIRE(collective.layout().nccl_ranks == 2);
  // Roots: a member of device 0's group (its buffer is copied into the leader's first), the
  // leader of device 1, the leader of device 0.
  const std::vector<int> roots{2, 1, 0};
  std::vector<std::vector<std::vector<float>>> seen(3);
  dl::test::on_threads(3, [&](int w) {
    seen[static_cast<std::size_t>(w)] =
        run_worker(collective, *workers[static_cast<std::size_t>(w)], w, w, roots);
  });
  for (std::size_t round = 0; round < roots.size(); ++round) {
    const int r = static_cast<int>(round);
    // NCCL rank 0 is device 0's group (workers 0 + 2, in that order), rank 1 is worker 1.
    const std::vector<float> group0 =
        dl::test::naive_sum({dl::test::rank_values(0, r), dl::test::rank_values(2, r)});
    const std::vector<float> sum = dl::test::naive_sum({group0, dl::test::rank_values(1, r)});
    for (std::size_t w = 0; w < 3; ++w) {
      INFO("worker " << w << ", round " << round << ", root " << roots[round]);
      CHECK(seen[w][2 * round] == sum);
      CHECK(seen[w][2 * round + 1] == dl::test::rank_values(roots[round], 100 + r));
    }
  }
}

TEST_CASE("GpuCollective over two processes (threads) with a worker each", "[nccl_host]") {
  auto job = std::make_shared<dl::test::ThreadJob>(2);
  std::vector<std::vector<std::vector<float>>> seen(2);
  std::vector<std::string> names(2);
  dl::test::on_threads(2, [&](int p) {
    dl::test::ThreadProcessGroup processes(job, p);
    // Each process on its own device: one machine, so they must not share one.
    auto workers = make_workers({p});
    GpuCollective collective(participants(workers), processes, dl::gpu::LaunchLimits{});
    names[static_cast<std::size_t>(p)] = collective.name();
    seen[static_cast<std::size_t>(p)] = run_worker(collective, *workers[0], 0, p, {0, 0});
  });
  for (std::size_t p = 0; p < 2; ++p) {
    INFO("process " << p << ": " << names[p]);
    CHECK_THAT(names[p], Catch::Contains("NCCL over 2 GPU(s) of 2 process(es)"));
    for (int round = 0; round < 2; ++round) {
      const std::size_t at = 2 * static_cast<std::size_t>(round);
      CHECK(seen[p][at] == dl::test::naive_sum(
                               {dl::test::rank_values(0, round), dl::test::rank_values(1, round)}));
      // The root is worker 0 of process 0.
      CHECK(seen[p][at + 1] == dl::test::rank_values(0, 100 + round));
    }
  }
}

TEST_CASE("GpuCollective's abort wakes a barrier waiting for another process", "[nccl_host]") {
  auto job = std::make_shared<dl::test::ThreadJob>(2);
  std::string outcome;
  double after_abort = -1.0;
  dl::test::on_threads(2, [&](int p) {
    dl::test::ThreadProcessGroup processes(job, p);
    auto workers = make_workers({p});
    GpuCollective collective(participants(workers), processes, dl::gpu::LaunchLimits{});
    processes.barrier();  // both collectives are set up
    if (p == 1) {
      // Process 1 leaves the job without reaching the barrier (MPI would end it).
      collective.abort();
      return;
    }
    std::chrono::steady_clock::time_point aborted_at;
    std::thread aborter([&] {
      // Long enough that a barrier which was going to return has returned.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      aborted_at = std::chrono::steady_clock::now();
      collective.abort();  // what the trainer does when a worker fails
    });
    try {
      collective.barrier(0);  // waits on the host for an NCCL all-reduce process 1 never joins
      outcome = "returned";
    } catch (const dl::CollectiveAborted&) {
      outcome = "aborted";
    }
    aborter.join();
    after_abort = dl::test::seconds_since(aborted_at);
  });
  CHECK(outcome == "aborted");
  CHECK(after_abort >= 0.0);
  CHECK(after_abort < 2.0);
}

TEST_CASE("GpuCollective over processes with different device layouts", "[nccl_host]") {
  // Process 0: workers on devices 0 and 1 (two NCCL ranks); process 1: both workers on device 2
  // (one NCCL rank, a device group of two). NCCL ranks: 0 = p0 w0, 1 = p0 w1, 2 = p1 w0 + w1.
  auto job = std::make_shared<dl::test::ThreadJob>(2);
  const std::vector<std::vector<int>> devices{{0, 1}, {2, 2}};
  // Broadcast roots are process 0's workers: one on each of its devices.
  const std::vector<int> roots{1, 0};
  std::vector<std::vector<std::vector<float>>> seen(4);
  std::vector<int> nccl_ranks(2, 0);
  dl::test::on_threads(2, [&](int p) {
    dl::test::ThreadProcessGroup processes(job, p);
    auto workers = make_workers(devices[static_cast<std::size_t>(p)]);
    GpuCollective collective(participants(workers), processes, dl::gpu::LaunchLimits{2, 33});
    nccl_ranks[static_cast<std::size_t>(p)] = collective.layout().nccl_ranks;
    dl::test::on_threads(2, [&](int w) {
      seen[static_cast<std::size_t>(2 * p + w)] =
          run_worker(collective, *workers[static_cast<std::size_t>(w)], w, 2 * p + w, roots);
    });
  });
  CHECK(nccl_ranks == std::vector<int>{3, 3});
  for (std::size_t round = 0; round < roots.size(); ++round) {
    const int r = static_cast<int>(round);
    const std::vector<float> process1 =
        dl::test::naive_sum({dl::test::rank_values(2, r), dl::test::rank_values(3, r)});
    const std::vector<float> sum =
        dl::test::naive_sum({dl::test::rank_values(0, r), dl::test::rank_values(1, r), process1});
    for (std::size_t g = 0; g < 4; ++g) {
      INFO("global worker " << g << ", round " << round << ", root " << roots[round]);
      CHECK(seen[g][2 * round] == sum);
      CHECK(seen[g][2 * round + 1] == dl::test::rank_values(roots[round], 100 + r));
    }
  }
}
