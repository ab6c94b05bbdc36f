// The host grid itself: barriers, shuffles and the errors a GPU would hang on or leave
// undefined, launch-configuration errors, and the 16-bit conversions against an independent
// reference over every bit pattern. The probe kernels here are launched through
// dl::emu::launch directly, so they are not counted among the kernels of cuda/.
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "cuda_check.hpp"
#include "host_grid.hpp"

namespace dl {
namespace {

// Each thread reads its neighbour's value, written before the barrier.
__global__ void rotate_through_shared(int* out) {
  __shared__ int shared[1024];
  shared[threadIdx.x] = static_cast<int>(threadIdx.x + 100 * blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = shared[(threadIdx.x + 1) % blockDim.x];
}

__global__ void warp_sum(const double* in, double* out) {
  double v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  out[threadIdx.x] = v;
}

__global__ void barrier_in_branch(int* out) {
  if (threadIdx.x % 32 == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
  }
}

__global__ void shuffle_after_early_return(int* out) {
  if (threadIdx.x == 3) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

TEST_CASE("host grid: __syncthreads orders shared memory within each block") {
  for (unsigned threads : {1u, 7u, 64u, 1024u}) {
    std::vector<int> out(3 * threads, -1);
    emu::launch(rotate_through_shared, "rotate_through_shared", 3, threads)(out.data());
    for (unsigned b = 0; b < 3; ++b) {
      for (unsigned t = 0; t < threads; ++t) {
        REQUIRE(out[b * threads + t] == static_cast<int>((t + 1) % threads + 100 * b));
      }
    }
  }
}

TEST_CASE("host grid: __shfl_down_sync reads lane + delta, or the lane's own value past the warp") {
  std::vector<double> in(64), out(64);
  for (int i = 0; i < 64; ++i) in[i] = i;
  emu::launch(warp_sum, "warp_sum", 1, 64)(in.data(), out.data());
  // Lane 0 of each warp has the warp's sum; lane 31 only ever adds itself (32 times).
  CHECK(out[0] == 496.0);
  CHECK(out[32] == 496.0 + 32 * 32);
  CHECK(out[31] == 31.0 * 32);
}

TEST_CASE("host grid: barriers and shuffles a GPU would hang on are errors") {
  std::vector<int> out(64);
  CHECK_THROWS_WITH(emu::launch(barrier_in_branch, "barrier_in_branch", 1, 64)(out.data()),
                    Catch::Contains("deadlock"));
  CHECK_THROWS_WITH(
      emu::launch(shuffle_after_early_return, "shuffle_after_early_return", 1, 32)(out.data()),
      Catch::Contains("returned"));
  std::vector<double> in(40), sums(40);
  CHECK_THROWS_WITH(emu::launch(warp_sum, "warp_sum", 1, 40)(in.data(), sums.data()),
                    Catch::Contains("not whole warps"));
}

TEST_CASE("host grid: a block over 1024 threads is a launch error, as on a GPU") {
  std::vector<int> out(2048);
  emu::launch(rotate_through_shared, "rotate_through_shared", 1, 1025)(out.data());
  CHECK_THROWS_AS(gpu::check_launch("rotate_through_shared", __FILE__, __LINE__), Error);
  emu::launch(rotate_through_shared, "rotate_through_shared", 1, 4)(out.data());
  CHECK_NOTHROW(gpu::check_launch("rotate_through_shared", __FILE__, __LINE__));
}

// v rounded to a format with `bits` significand bits (implicit one included), smallest normal
// 2^min_exp and largest finite `max_finite`, to nearest with ties to even. Works in double,
// where v / quantum is exact, and nearbyint rounds once.
float reference_round(float v, int bits, int min_exp, double max_finite) {
  if (std::isnan(v) || std::isinf(v)) return v;
  const double magnitude = std::fabs(static_cast<double>(v));
  if (magnitude == 0.0) return v;
  const int exponent = std::max(std::ilogb(magnitude), min_exp);
  const double quantum = std::ldexp(1.0, exponent - (bits - 1));
  double r = std::nearbyint(magnitude / quantum) * quantum;
  // Halfway to the next binade beyond max_finite rounds to infinity.
  if (r > max_finite) r = std::numeric_limits<double>::infinity();
  return static_cast<float>(std::copysign(r, static_cast<double>(v)));
}

TEST_CASE("host grid: 16-bit conversions round to nearest even, over every pattern") {
  std::vector<float> probes;
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float h = __half2float(__half{static_cast<std::uint16_t>(bits)});
    const float b = __bfloat162float(__nv_bfloat16{static_cast<std::uint16_t>(bits)});
    // Every pattern converts to float and back to itself (NaN aside).
    if (!std::isnan(h)) REQUIRE(__float2half_rn(h).bits == bits);
    if (!std::isnan(b)) REQUIRE(__float2bfloat16_rn(b).bits == bits);
    // The values between neighbours: exact ties and just either side of them.
    for (float v : {h, b}) {
      if (!std::isfinite(v)) continue;
      const float up = std::nextafter(v, INFINITY);
      probes.insert(probes.end(), {v, up, std::nextafter(v * 1.0004883f, INFINITY), v * 1.0004883f,
                                   v * 1.00390625f});
    }
  }
  for (float v : probes) {
    INFO("value " << v);
    const float h = __half2float(__float2half_rn(v));
    const float b = __bfloat162float(__float2bfloat16_rn(v));
    REQUIRE(h == reference_round(v, 11, -14, 65504.0));
    REQUIRE(b == reference_round(v, 8, -126, 3.3895313892515355e38));
  }
  CHECK(std::isnan(__half2float(__float2half_rn(NAN))));
  CHECK(std::isnan(__bfloat162float(__float2bfloat16_rn(NAN))));
  CHECK(std::isinf(__half2float(__float2half_rn(65520.0f))));
  CHECK(__half2float(__float2half_rn(65519.0f)) == 65504.0f);
}

}  // namespace
}  // namespace dl
