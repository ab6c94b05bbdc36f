// The GPU collective (cuda/gpu_collective.hpp) on real devices: workers sharing device 0 summed
// on it, the NCCL path over a one-rank communicator, and abort. Each worker runs on its own
// thread with its own CudaBackend (its own stream), as in the trainer.
//
// Expected sums are computed on the host in worker order, the order the device group adds in,
// so they must match bit for bit; every worker must hold the same bits afterwards.
//
// The [gpu] cases return at once, counted as skipped, when no CUDA device is visible.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_registry.hpp"
#include "core/error.hpp"
#include "cuda_backend.hpp"
#include "device_query.hpp"
#include "gpu_collective.hpp"
#include "gpu_test_support.hpp"
#include "parallel/collective.hpp"
#include "parallel/process_group.hpp"

namespace {

using dl::gpu::GpuCollective;
using dl::gpu::NcclUse;

// Long enough that a thread that was going to leave a meeting has left it.
constexpr auto kBlockedLongEnough = std::chrono::milliseconds(100);

// The job of these tests: this process alone (the parallel library, which has the real one,
// is not linked into the CUDA tests).
class OneProcess final : public dl::ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "one test process"; }
  void all_reduce_sum(float*, std::size_t) override {}
  void all_reduce_sum(double*, std::size_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override { return {value}; }
  std::vector<std::string> gather(const std::string& bytes, int) override { return {bytes}; }
  void barrier() override {}
  [[noreturn]] void abort_job(int) override { std::terminate(); }
};

struct Workers {
  std::vector<std::unique_ptr<dl::Backend>> backends;

  // `count` workers, worker w on cuda.devices[w mod devices.size()] (the registry's rule).
  Workers(int count, const std::vector<int>& devices) {
    dl::Config config;
    config.cuda.devices = devices;
    config.parallel.workers = count;
    for (int w = 0; w < count; ++w)
      backends.push_back(dl::make_backend(dl::BackendKind::kCuda, config, w));
  }

  std::vector<dl::gpu::GpuParticipant> participants() const {
    std::vector<dl::gpu::GpuParticipant> p;
    for (const auto& b : backends) {
      const auto& cuda = dynamic_cast<const dl::gpu::CudaBackend&>(*b);
      p.push_back({cuda.device(), cuda.stream()});
    }
    return p;
  }
  dl::Backend& operator[](int w) { return *backends[static_cast<std::size_t>(w)]; }
  int size() const { return static_cast<int>(backends.size()); }
};

// Runs body(w) for every worker on its own thread and rethrows the first failure.
void on_worker_threads(int workers, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        body(w);
      } catch (...) {
        failures[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) {
    if (f != nullptr) std::rethrow_exception(f);
  }
}

// ((v[0] + v[1]) + v[2]) ... in float, element by element: the device group's order.
std::vector<float> sum_in_worker_order(const std::vector<std::vector<float>>& values) {
  std::vector<float> sum = values.front();
  for (std::size_t w = 1; w < values.size(); ++w) {
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[w][i];
  }
  return sum;
}

std::vector<std::vector<float>> random_inputs(int workers, std::size_t n, std::uint64_t round) {
  std::vector<std::vector<float>> inputs;
  for (int w = 0; w < workers; ++w)
    inputs.push_back(dl::test::random_floats(n, round * 100 + static_cast<std::uint64_t>(w)));
  return inputs;
}

// All-reduces `inputs` (one vector per worker) and returns every worker's result.
std::vector<std::vector<float>> all_reduce(Workers& workers, GpuCollective& collective,
                                           const std::vector<std::vector<float>>& inputs) {
  std::vector<dl::DeviceBuffer<float>> buffers;
  for (int w = 0; w < workers.size(); ++w)
    buffers.push_back(dl::test::to_device(workers[w], inputs[static_cast<std::size_t>(w)]));
  const std::size_t n = inputs.front().size();
  on_worker_threads(workers.size(), [&](int w) {
    collective.all_reduce_sum(w, buffers[static_cast<std::size_t>(w)].data(), n);
  });
  std::vector<std::vector<float>> results;
  for (int w = 0; w < workers.size(); ++w)
    results.push_back(dl::test::to_host(workers[w], buffers[static_cast<std::size_t>(w)]));
  return results;
}

int visible_devices() {
  return static_cast<int>(dl::gpu::scan_devices().devices.size());
}

}  // namespace

TEST_CASE("[gpu] 2 and 3 workers sharing device 0 all-reduce to the in-order sum on every worker",
          "[gpu][gpu_collective]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kCount = 1031;  // not a multiple of any block size
  constexpr int kRounds = 3;            // the events and meetings are reused round after round
  for (const int count : {2, 3}) {
    INFO(count << " workers");
    Workers workers(count, {0});
    OneProcess process;
    GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{});
    CHECK_FALSE(collective.uses_nccl());
    CHECK(collective.size() == count);
    for (int round = 0; round < kRounds; ++round) {
      INFO("round " << round);
      const auto inputs = random_inputs(count, kCount, static_cast<std::uint64_t>(round));
      const auto results = all_reduce(workers, collective, inputs);
      const std::vector<float> expected = sum_in_worker_order(inputs);
      for (int w = 0; w < count; ++w) {
        INFO("worker " << w);
        CHECK(results[static_cast<std::size_t>(w)] == expected);
      }
    }
  }
}

TEST_CASE("[gpu] more workers on one device than one launch sums, under tight launch limits",
          "[gpu][gpu_collective]") {
  SKIP_WITHOUT_GPU();
  constexpr int kWorkers = 10;            // above the 8 sources one launch takes
  constexpr std::size_t kCount = 100003;  // many grid-stride passes of 3 blocks x 100 threads
  dl::gpu::LaunchLimits tight;
  tight.max_grid = 3;
  tight.max_block = 100;
  Workers workers(kWorkers, {0});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, tight);
  const auto inputs = random_inputs(kWorkers, kCount, 7);
  const auto results = all_reduce(workers, collective, inputs);
  const std::vector<float> expected = sum_in_worker_order(inputs);
  for (int w = 0; w < kWorkers; ++w) {
    INFO("worker " << w);
    CHECK(results[static_cast<std::size_t>(w)] == expected);
  }
}

TEST_CASE("[gpu] broadcast from each of 3 workers sharing device 0 reaches all of them",
          "[gpu][gpu_collective]") {
  SKIP_WITHOUT_GPU();
  constexpr int kWorkers = 3;
  constexpr std::size_t kCount = 517;
  Workers workers(kWorkers, {0});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{});
  for (int root = 0; root < kWorkers; ++root) {
    INFO("root " << root);
    const auto inputs = random_inputs(kWorkers, kCount, 20 + static_cast<std::uint64_t>(root));
    std::vector<dl::DeviceBuffer<float>> buffers;
    for (int w = 0; w < kWorkers; ++w)
      buffers.push_back(dl::test::to_device(workers[w], inputs[static_cast<std::size_t>(w)]));
    on_worker_threads(kWorkers, [&](int w) {
      collective.broadcast(w, buffers[static_cast<std::size_t>(w)].data(), kCount, root);
    });
    for (int w = 0; w < kWorkers; ++w) {
      INFO("worker " << w);
      CHECK(dl::test::to_host(workers[w], buffers[static_cast<std::size_t>(w)]) ==
            inputs[static_cast<std::size_t>(root)]);
    }
  }
}

TEST_CASE("[gpu] barrier of workers sharing a device returns once all have arrived",
          "[gpu][gpu_collective]") {
  SKIP_WITHOUT_GPU();
  Workers workers(3, {0});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{});
  std::atomic<int> passed{0};
  on_worker_threads(3, [&](int w) {
    collective.barrier(w);
    collective.barrier(w);
    passed.fetch_add(1);
  });
  CHECK(passed.load() == 3);
}

TEST_CASE("[gpu] NCCL over one GPU: all_reduce_sum and broadcast are the identity, barrier returns",
          "[gpu][gpu_collective][nccl]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kCount = 4099;
  Workers workers(1, {0});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{},
                           NcclUse::kAlways);
  REQUIRE(collective.uses_nccl());
  CHECK(collective.layout().nccl_ranks == 1);
  CHECK(collective.name().find("NCCL") != std::string::npos);

  const std::vector<float> input = dl::test::random_floats(kCount, 40);
  auto buffer = dl::test::to_device(workers[0], input);
  collective.all_reduce_sum(0, buffer.data(), kCount);
  CHECK(dl::test::to_host(workers[0], buffer) == input);
  collective.broadcast(0, buffer.data(), kCount, 0);
  CHECK(dl::test::to_host(workers[0], buffer) == input);
  collective.barrier(0);
  collective.all_reduce_sum(0, buffer.data(), kCount);  // the communicator still works after it
  CHECK(dl::test::to_host(workers[0], buffer) == input);
}

TEST_CASE("[gpu] NCCL over one GPU behind 2 workers sharing it: the in-order sum on both",
          "[gpu][gpu_collective][nccl]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kCount = 2053;
  Workers workers(2, {0});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{},
                           NcclUse::kAlways);
  REQUIRE(collective.uses_nccl());
  const auto inputs = random_inputs(2, kCount, 50);
  const auto results = all_reduce(workers, collective, inputs);
  const std::vector<float> expected = sum_in_worker_order(inputs);
  CHECK(results[0] == expected);
  CHECK(results[1] == expected);
  on_worker_threads(2, [&](int w) { collective.barrier(w); });
}

TEST_CASE("[gpu] abort wakes a worker waiting for one that never comes, and later calls throw",
          "[gpu][gpu_collective]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kCount = 64;
  for (const bool in_barrier : {false, true}) {
    INFO((in_barrier ? "barrier" : "all_reduce_sum"));
    Workers workers(2, {0});
    OneProcess process;
    GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{});
    auto buffer = dl::test::to_device(workers[0], std::vector<float>(kCount, 1.0f));
    std::atomic<bool> woke_aborted{false};
    std::atomic<bool> returned{false};
    std::thread waiter([&] {
      try {
        // Worker 1 never calls: worker 0 waits in the meeting.
        if (in_barrier) {
          collective.barrier(0);
        } else {
          collective.all_reduce_sum(0, buffer.data(), kCount);
        }
        returned = true;
      } catch (const dl::CollectiveAborted&) {
        woke_aborted = true;
      }
    });
    std::this_thread::sleep_for(kBlockedLongEnough);
    CHECK_FALSE(returned.load());
    CHECK_FALSE(woke_aborted.load());
    collective.abort();
    waiter.join();
    CHECK(woke_aborted.load());
    CHECK_FALSE(returned.load());
    CHECK_THROWS_AS(collective.all_reduce_sum(1, buffer.data(), kCount), dl::CollectiveAborted);
    CHECK_THROWS_AS(collective.barrier(0), dl::CollectiveAborted);
    CHECK_THROWS_AS(collective.broadcast(0, buffer.data(), kCount, 0), dl::CollectiveAborted);
  }
}

TEST_CASE("[gpu] abort of the NCCL path: later calls throw, teardown after it is clean",
          "[gpu][gpu_collective][nccl]") {
  SKIP_WITHOUT_GPU();
  constexpr std::size_t kCount = 64;
  Workers workers(1, {0});
  OneProcess process;
  auto buffer = dl::test::to_device(workers[0], std::vector<float>(kCount, 2.0f));
  {
    GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{},
                             NcclUse::kAlways);
    collective.all_reduce_sum(0, buffer.data(), kCount);
    collective.abort();
    collective.abort();  // a second abort (another failing worker) is harmless
    CHECK_THROWS_AS(collective.all_reduce_sum(0, buffer.data(), kCount), dl::CollectiveAborted);
    CHECK_THROWS_AS(collective.barrier(0), dl::CollectiveAborted);
  }
  // The backend and its stream still work after the communicator is gone.
  CHECK(dl::test::to_host(workers[0], buffer) == std::vector<float>(kCount, 2.0f));
}

TEST_CASE("[gpu] two GPUs in one process: NCCL between device groups, the same sum on all",
          "[gpu][gpu_collective][nccl]") {
  SKIP_WITHOUT_GPU();
  if (visible_devices() < 2) {
    WARN("skipped: needs 2 visible GPUs, " << visible_devices() << " visible");
    return;
  }
  constexpr std::size_t kCount = 3001;
  // Workers 0 and 2 on GPU 0 (summed there first), worker 1 on GPU 1.
  Workers workers(3, {0, 1});
  OneProcess process;
  GpuCollective collective(workers.participants(), process, dl::gpu::LaunchLimits{});
  REQUIRE(collective.uses_nccl());
  CHECK(collective.layout().nccl_ranks == 2);
  const auto inputs = random_inputs(3, kCount, 60);
  const auto results = all_reduce(workers, collective, inputs);
  // Two ranks: NCCL adds the two device sums once, and a + b == b + a in floating point.
  std::vector<float> expected = sum_in_worker_order({inputs[0], inputs[2]});
  for (std::size_t i = 0; i < kCount; ++i) expected[i] += inputs[1][i];
  for (int w = 0; w < 3; ++w) {
    INFO("worker " << w);
    CHECK(results[static_cast<std::size_t>(w)] == expected);
  }
  on_worker_threads(3, [&](int w) { collective.barrier(w); });
}
