// Whole networks on every backend: random_network.hpp's graphs (every activation, residual
// blocks, concat, skips from far up, batch normalization in both orders, pooling, dropout) take
// one training step on the backend under test and on the CPU backend, from the same parameters
// and batch: the loss, the network's output and every parameter's gradient must agree to float
// rounding. Where the op tests check each kernel alone, this checks the graph's plumbing on the
// backend: in-place layers, fused batch normalization and activation, gradient routes that alias
// or sum buffers, concat's channel offsets. Compiled into the CUDA programs (host grid, device)
// and the programs of the CPU kernels' other variants (backends_cpu_variant.cpp); on the CPU
// backend itself the random-network tests of tests/nn check the gradients.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backends_under_test.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/network_step.hpp"
#include "config/config_loader.hpp"
#include "nn/random_network.hpp"

namespace dl::testing {
namespace {

// Networks per backend (random_network_count: more for a longer search).
constexpr unsigned kNetworks = 24;
constexpr int kBatch = 6;

// Agreement to float rounding, relative to the largest value of the vector (a gradient entry
// near zero carries the rounding of the larger terms it was summed from), with a floor for a
// network whose gradients have all but vanished: below 1e-6 a gradient of a loss of order one
// is the rounding of the loss's own terms.
void check_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  constexpr float kFloor = 1e-6f;
  float scale = 0.0f;
  for (float w : want) scale = std::max(scale, std::fabs(w));
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " " << i << ": " << got[i] << " against the CPU's " << want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= 1e-4f * scale + 1e-3f * std::fabs(want[i]) + kFloor);
  }
}

}  // namespace

TEST_CASE("networks over backends: a training step of random graphs agrees with the CPU's",
          "[backend][graph]") {
  for (const BackendUnderTest& b : backends_under_test()) {
    if (b.products != DType::kFloat) continue;  // 16-bit products: backend_op_tests_16bit.cpp
    for (unsigned seed = 1; seed <= random_network_count(kNetworks); ++seed) {
      const RandomNetwork net = random_network(seed);
      INFO(b.name << ", network of seed " << seed << ":\n" << net.yaml);
      const Config config = load_config_string(net.yaml, "random.yaml");
      CpuBackend cpu;
      const NetworkStep want = take_network_step(config, cpu, kBatch);
      const auto backend = b.make();
      const NetworkStep got = take_network_step(config, *backend, kBatch);
      CHECK(std::fabs(got.loss - want.loss) <= 1e-5f * std::fabs(want.loss) + 1e-6f);
      check_close(got.output, want.output, "output");
      check_close(got.gradients, want.gradients, "gradient");
    }
  }
}

}  // namespace dl::testing
