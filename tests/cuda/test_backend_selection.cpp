// Backend and device selection of the CUDA registry (cuda/backend_selection.hpp): DL4J's
// BACKEND_PRIORITY_* rules and the mapping of cuda.devices to workers. Runs on any machine.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend_selection.hpp"
#include "core/error.hpp"

namespace {

dl::Config config_with_devices(std::vector<int> devices, bool multi_gpu = true) {
  dl::Config c;
  c.sourcePath = "run.yaml";
  c.cuda.devices = std::move(devices);
  c.cuda.allowMultiGPU = multi_gpu;
  return c;
}

}  // namespace

TEST_CASE("priority variables parse whole numbers and fall back when unset",
          "[backend_selection]") {
  CHECK(dl::gpu::parse_priority("BACKEND_PRIORITY_GPU", nullptr, 100) == 100);
  CHECK(dl::gpu::parse_priority("BACKEND_PRIORITY_GPU", "", 100) == 100);
  CHECK(dl::gpu::parse_priority("BACKEND_PRIORITY_CPU", "250", 0) == 250);
  CHECK(dl::gpu::parse_priority("BACKEND_PRIORITY_CPU", "-3", 0) == -3);
  for (const char* bad : {"high", "10x", "1.5", "99999999999999999999"}) {
    INFO(bad);
    try {
      dl::gpu::parse_priority("BACKEND_PRIORITY_CPU", bad, 0);
      FAIL("accepted a value that is not a whole number");
    } catch (const dl::ConfigError& e) {
      CHECK(std::string(e.what()).find("BACKEND_PRIORITY_CPU") != std::string::npos);
    }
  }
}

TEST_CASE("auto takes the GPU only when its priority is higher and a device is visible",
          "[backend_selection]") {
  const dl::gpu::BackendPriorities defaults;
  CHECK(defaults.gpu > defaults.cpu);  // DL4J: CUDA wins by default
  CHECK(dl::gpu::auto_takes_gpu(defaults, 1));
  CHECK_FALSE(dl::gpu::auto_takes_gpu(defaults, 0));
  CHECK_FALSE(dl::gpu::auto_takes_gpu({200, 100}, 4));
  CHECK_FALSE(dl::gpu::auto_takes_gpu({100, 100}, 4));  // a tie keeps the CPU
  CHECK(dl::gpu::auto_takes_gpu({0, 1}, 4));
}

TEST_CASE("devices for a run: all visible, a list, or only the first", "[backend_selection]") {
  CHECK(dl::gpu::devices_for_run(config_with_devices({}), 3, "") == std::vector<int>{0, 1, 2});
  CHECK(dl::gpu::devices_for_run(config_with_devices({2, 0}), 3, "") == std::vector<int>{2, 0});
  CHECK(dl::gpu::devices_for_run(config_with_devices({}, false), 3, "") == std::vector<int>{0});
  CHECK(dl::gpu::devices_for_run(config_with_devices({1, 2}, false), 3, "") == std::vector<int>{1});
}

TEST_CASE("devices for a run: a device that is not visible is a config error",
          "[backend_selection]") {
  try {
    dl::gpu::devices_for_run(config_with_devices({0, 5}), 2, "");
    FAIL("device 5 of 2 accepted");
  } catch (const dl::ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("run.yaml") == 0);
    CHECK(m.find("device 5") != std::string::npos);
  }
  try {
    dl::gpu::devices_for_run(config_with_devices({}), 0, "no driver here");
    FAIL("a run without devices accepted");
  } catch (const dl::ConfigError& e) {
    CHECK(std::string(e.what()).find("no driver here") != std::string::npos);
  }
}

TEST_CASE("workers sharing a device share its cache limit", "[backend_selection]") {
  dl::Config c = config_with_devices({});
  c.parallel.workers = 5;
  // Workers 0, 2, 4 on the first of two devices, 1 and 3 on the second.
  CHECK(dl::gpu::workers_sharing_device(c, 2, 0) == 3);
  CHECK(dl::gpu::workers_sharing_device(c, 2, 4) == 3);
  CHECK(dl::gpu::workers_sharing_device(c, 2, 3) == 2);
  CHECK(dl::gpu::workers_sharing_device(c, 5, 1) == 1);
  c.parallel.workers = 1;
  CHECK(dl::gpu::workers_sharing_device(c, 4, 0) == 1);
}

TEST_CASE("the placement line names each worker's GPU and warns when they do not divide evenly",
          "[backend_selection]") {
  dl::Config c;
  c.parallel.workers = 4;
  const std::string even = dl::gpu::describe_worker_placement(c, {0, 1});
  CHECK(even.find("worker 0 -> GPU 0, worker 1 -> GPU 1, worker 2 -> GPU 0, worker 3 -> GPU 1") !=
        std::string::npos);
  CHECK(even.find("not a multiple") == std::string::npos);

  c.parallel.workers = 3;
  const std::string uneven = dl::gpu::describe_worker_placement(c, {2, 5});
  CHECK(uneven.find("worker 2 -> GPU 2") != std::string::npos);
  CHECK(uneven.find("not a multiple of the GPUs (2): some GPUs run 2 workers, others 1") !=
        std::string::npos);

  c.parallel.workers = 1;
  CHECK(dl::gpu::describe_worker_placement(c, {0, 1}).find("1 worker(s) on 1 GPU(s)") !=
        std::string::npos);
}
