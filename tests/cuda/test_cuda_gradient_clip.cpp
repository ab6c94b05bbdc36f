// The gradient-normalization ops on the GPU against the CPU backend: the same math
// (backend/gradient_clip_math.hpp) on the same inputs gives the same bits, for scaling from a
// device scalar written by sum_of_squares, in every branch (above, below, renormalize, zero).
// [gpu]: skipped, saying so, without a CUDA device.
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "gpu_test_support.hpp"

namespace {

constexpr std::size_t kCount = 4099;  // odd: every grid-stride remainder

struct Case {
  float threshold;
  bool always;
};

}  // namespace

TEST_CASE("cuda: clip_values and scale_to_norm match the CPU bit for bit", "[gpu]") {
  SKIP_WITHOUT_GPU();
  dl::CpuBackend cpu;
  std::vector<std::unique_ptr<dl::Backend>> gpus;
  gpus.push_back(dl::test::make_gpu_backend());
  gpus.push_back(dl::test::make_gpu_backend(dl::test::kTightGrid, dl::test::kTightBlock));
  for (const auto& gpu : gpus) {
    const std::vector<float> x = dl::test::random_floats(kCount, 41, 3.0f);
    std::vector<float> clipped = x;
    cpu.clip_values(kCount, 0.5f, clipped.data());
    auto device = dl::test::to_device(*gpu, x);
    gpu->clip_values(kCount, 0.5f, device.data());
    CHECK(dl::test::to_host(*gpu, device) == clipped);

    // Norm of x is about 3 * sqrt(4099) ~ 192: clip below it, not above it, and renormalize.
    for (const Case c : {Case{10.0f, false}, Case{1000.0f, false}, Case{1.0f, true}}) {
      INFO("threshold " << c.threshold << (c.always ? ", renormalize" : ""));
      std::vector<float> want = x;
      float cpu_sum = 0.0f;
      cpu.sum_of_squares(kCount, want.data(), &cpu_sum);
      cpu.scale_to_norm(kCount, &cpu_sum, c.threshold, c.always, want.data());
      auto d = dl::test::to_device(*gpu, x);
      dl::FloatBuffer sum(*gpu, 1);
      // The GPU's own sum may differ from the CPU's in the last bit (another order of addition):
      // give both the CPU's so that the scaling itself is compared exactly.
      gpu->upload(sum.data(), &cpu_sum, sizeof(float));
      gpu->scale_to_norm(kCount, sum.data(), c.threshold, c.always, d.data());
      CHECK(dl::test::to_host(*gpu, d) == want);
    }
    // A zero vector stays zero (no division by a zero norm).
    auto zeros = dl::test::to_device(*gpu, std::vector<float>(kCount, 0.0f));
    dl::FloatBuffer sum(*gpu, 1);
    gpu->sum_of_squares(kCount, zeros.data(), sum.data());
    gpu->scale_to_norm(kCount, sum.data(), 1.0f, true, zeros.data());
    CHECK(dl::test::to_host(*gpu, zeros) == std::vector<float>(kCount, 0.0f));
  }
}
