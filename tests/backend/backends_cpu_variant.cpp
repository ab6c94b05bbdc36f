// backend_op_tests.cpp and backend_network_tests.cpp on another compiled variant of the CPU
// kernels than the one the build runs (tests/backend/meson.build compiles this file once per
// variant, with -DDL_CPU_ISA naming its namespace): every op against its reference and against
// the picked variant, and random networks' training steps against the picked variant's; here
// also the variant's own promise, the same bits on any thread count. A portable build runs its
// narrower variants on CPUs that lack the wider ones (an AVX2 server runs x86-64-v3), and only
// these tests run every op there; cpu_isa_guard.cpp skips the program on a CPU that cannot run
// the variant.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/isa.hpp"
#include "backend/cpu/kernel_table.hpp"
#include "backend/network_step.hpp"
#include "backends_under_test.hpp"
#include "config/config_loader.hpp"
#include "nn/random_network.hpp"
#include "same_bits.hpp"

namespace dl::cpu::DL_CPU_ISA {
extern const KernelTable kKernelTable;
}

namespace dl::testing {

std::vector<BackendUnderTest> backends_under_test() {
  const cpu::KernelTable& variant = cpu::DL_CPU_ISA::kKernelTable;
  return {{std::string("cpu, the ") + cpu::isa_level_vectors(variant.level) + " kernels",
           [&variant] { return std::make_unique<CpuBackend>(variant); }}};
}

namespace {

// Networks (random_network_count: more for a longer search), samples per step, and the thread
// counts compared with one thread: 3 cuts most tasks unevenly. A batch of 64 gives the ops several
// tasks each (convolution partials over samples among them), which a batch of 8 does not: a
// mutant whose dW partials followed the thread count passed at 8 and failed 13 checks at 64.
constexpr unsigned kNetworks = 24;
constexpr int kBatch = 64;
constexpr int kThreadCounts[] = {2, 3};

}  // namespace

TEST_CASE("random networks on the variant: the same bits on 1, 2 and 3 threads",
          "[backend][graph]") {
  CpuBackend variant(cpu::DL_CPU_ISA::kKernelTable);
  for (unsigned seed = 1; seed <= random_network_count(kNetworks); ++seed) {
    const RandomNetwork net = random_network(seed);
    INFO("network of seed " << seed << ":\n" << net.yaml);
    const Config config = load_config_string(net.yaml, "random.yaml");
    set_cpu_threads(1);
    const NetworkStep one = take_network_step(config, variant, kBatch);
    for (int threads : kThreadCounts) {
      INFO(threads << " threads");
      set_cpu_threads(threads);
      const NetworkStep many = take_network_step(config, variant, kBatch);
      CHECK(std::memcmp(&one.loss, &many.loss, sizeof(float)) == 0);
      CHECK(same_bits(one.output, many.output));
      CHECK(same_bits(one.gradients, many.gradients));
    }
    set_cpu_threads(1);
  }
}

}  // namespace dl::testing
