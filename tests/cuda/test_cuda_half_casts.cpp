// Mixed precision's casts: a host reference of round-to-nearest-even into each 16-bit format,
// checked on the CPU against values worked out by hand and against CUDA's own host conversions;
// the device kernels are then checked against it, bit for bit, and every 16-bit pattern is
// widened and narrowed back on the device. The [gpu] case returns at once, counted as skipped,
// when no CUDA device is visible.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <catch2/catch.hpp>

#include "gpu_test_support.hpp"
#include "half_format_traits.hpp"
#include "ops/precision_cast.hpp"

namespace {

using dl::DType;
using dl::FloatBuffer;
using dl::gpu::HalfFormat;
using dl::test::as_cuda;
using dl::test::FormatTraits;
using dl::test::kBFloat16Traits;
using dl::test::kHalfTraits;
using dl::test::kTightBlock;
using dl::test::kTightGrid;
using dl::test::random_floats;
using dl::test::to_device;
using dl::test::to_host;
using dl::test::unwritten;

// v rounded to the format, round to nearest with ties to even, as a float. Works in double, where
// |v| / quantum is exact, so nearbyint (the default rounding mode: nearest, ties to even) rounds
// exactly once. A magnitude that rounds above max_finite is infinity.
float reference_round(float v, const FormatTraits& t) {
  if (std::isnan(v) || std::isinf(v) || v == 0.0f) return v;
  const double magnitude = std::fabs(static_cast<double>(v));
  const int exponent = std::max(std::ilogb(magnitude), t.min_exponent);
  const double quantum = std::ldexp(1.0, exponent - (t.significand_bits - 1));
  const double rounded = std::nearbyint(magnitude / quantum) * quantum;
  const double result = rounded > t.max_finite ? std::numeric_limits<double>::infinity() : rounded;
  return static_cast<float>(std::copysign(result, static_cast<double>(v)));
}

// The float value of a 16-bit pattern, decoded field by field.
float reference_decode(std::uint16_t bits, const FormatTraits& t) {
  const int fraction_bits = t.significand_bits - 1;
  const int exponent_bits = 15 - fraction_bits;
  const int exponent_field = (bits >> fraction_bits) & ((1 << exponent_bits) - 1);
  const int fraction = bits & ((1 << fraction_bits) - 1);
  const int all_ones = (1 << exponent_bits) - 1;
  const double sign = (bits & 0x8000u) != 0 ? -1.0 : 1.0;
  if (exponent_field == all_ones)
    return static_cast<float>(fraction == 0 ? sign * std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::quiet_NaN());
  const int bias = all_ones / 2;
  if (exponent_field == 0)  // subnormal: no implicit bit, the smallest normal's exponent
    return static_cast<float>(sign * std::ldexp(fraction, 1 - bias - fraction_bits));
  return static_cast<float>(
      sign * std::ldexp((1 << fraction_bits) + fraction, exponent_field - bias - fraction_bits));
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  std::uint32_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;  // distinguishes -0 from +0
}

// Floats that exercise the rounding: random values over many binades, every tie and near-tie
// around a few representable values, the format's limits, subnormals, zeros, infinities, NaN.
std::vector<float> cast_inputs(const FormatTraits& t) {
  std::vector<float> v;
  const auto normals = random_floats(4000, 101);
  for (std::size_t i = 0; i < normals.size(); ++i) {
    const int binade = static_cast<int>(i % 60) - 30;
    v.push_back(std::ldexp(normals[i], binade));
  }
  const int fraction_bits = t.significand_bits - 1;
  for (const double base : {1.0, 1.5, 3.0, std::ldexp(1.0, t.min_exponent), t.max_finite}) {
    const double quantum = std::ldexp(1.0, std::ilogb(base) - fraction_bits);
    for (int k = -3; k <= 3; ++k) {
      const double near = base + (k + 0.5) * quantum;
      if (near > std::numeric_limits<float>::max()) continue;
      const float tie = static_cast<float>(near);
      v.push_back(tie);
      v.push_back(std::nextafter(tie, 0.0f));
      v.push_back(std::nextafter(tie, std::numeric_limits<float>::infinity()));
      v.push_back(-tie);
    }
  }
  for (int k = 1; k <= 8; ++k)  // the format's subnormal range and just below it
    v.push_back(static_cast<float>(k * std::ldexp(t.min_normal, -fraction_bits - 1)));
  v.push_back(std::numeric_limits<float>::denorm_min());
  v.push_back(std::numeric_limits<float>::max());
  v.push_back(0.0f);
  v.push_back(-0.0f);
  v.push_back(std::numeric_limits<float>::infinity());
  v.push_back(-std::numeric_limits<float>::infinity());
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  return v;
}

}  // namespace

// ---- host reference (runs everywhere)
// ------------------------------------------------------------

TEST_CASE("mixed precision: the host rounding reference gives the values worked out by hand") {
  const auto& h = kHalfTraits;
  const auto& bf = kBFloat16Traits;
  // Exact values stay.
  CHECK(reference_round(1.0f, h) == 1.0f);
  CHECK(reference_round(-2.5f, bf) == -2.5f);
  CHECK(reference_round(65504.0f, h) == 65504.0f);
  // Ties go to the even neighbour: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 (half).
  CHECK(reference_round(1.0f + 0x1p-11f, h) == 1.0f);
  CHECK(reference_round(1.0f + 3 * 0x1p-11f, h) == 1.0f + 0x1p-9f);
  CHECK(reference_round(1.0f + 0x1p-8f, bf) == 1.0f);  // bfloat16's spacing at 1 is 2^-7
  CHECK(reference_round(1.0f + 3 * 0x1p-8f, bf) == 1.0f + 0x1p-6f);
  // Just above a tie rounds up.
  CHECK(reference_round(std::nextafter(1.0f + 0x1p-11f, 2.0f), h) == 1.0f + 0x1p-10f);
  // Half overflows at 65520 (halfway to 65536, whose even neighbour is beyond the range).
  CHECK(reference_round(65519.0f, h) == 65504.0f);
  CHECK(std::isinf(reference_round(65520.0f, h)));
  CHECK(std::isinf(reference_round(std::numeric_limits<float>::max(), bf)));
  // Half subnormals are multiples of 2^-24: 2^-25 ties to 0, 3 * 2^-25 ties to 2^-23.
  CHECK(reference_round(0x1p-25f, h) == 0.0f);
  CHECK(reference_round(3 * 0x1p-25f, h) == 0x1p-23f);
  CHECK(std::isnan(reference_round(std::numeric_limits<float>::quiet_NaN(), h)));
  // Decoding.
  CHECK(reference_decode(0x3C00u, h) == 1.0f);
  CHECK(reference_decode(0x7BFFu, h) == 65504.0f);
  CHECK(reference_decode(0x0001u, h) == 0x1p-24f);
  CHECK(reference_decode(0xC000u, h) == -2.0f);
  CHECK(reference_decode(0x3F80u, bf) == 1.0f);
  CHECK(reference_decode(0x0001u, bf) == 0x1p-133f);
  CHECK(std::isinf(reference_decode(0x7C00u, h)));
  CHECK(std::isnan(reference_decode(0x7FC0u, bf)));
}

TEST_CASE("mixed precision: the host reference agrees with CUDA's round-to-nearest conversions") {
  for (const FormatTraits* t : {&kHalfTraits, &kBFloat16Traits}) {
    INFO("format " << t->name);
    for (const float v : cast_inputs(*t)) {
      const float cuda = t->format == HalfFormat::kHalf ? __half2float(__float2half_rn(v))
                                                        : __bfloat162float(__float2bfloat16_rn(v));
      INFO("input " << v);
      CHECK(same_float(cuda, reference_round(v, *t)));
    }
  }
}

// ---- device casts ------------------------------------------------------------------------------

TEST_CASE("mixed precision: the cast kernels round to nearest even and widen exactly", "[gpu]") {
  SKIP_WITHOUT_GPU();
  for (const FormatTraits* t : {&kHalfTraits, &kBFloat16Traits}) {
    for (const int max_grid : {4096, kTightGrid}) {
      INFO("format " << t->name << ", max grid " << max_grid);
      auto backend = dl::test::make_gpu_backend(
          max_grid, max_grid == kTightGrid ? kTightBlock : 256, t->dtype);
      auto& gpu = as_cuda(*backend);
      dl::gpu::LaunchLimits limits;
      limits.max_grid = max_grid;
      limits.max_block = max_grid == kTightGrid ? kTightBlock : limits.max_block;

      // float32 -> 16-bit -> float32 equals the reference rounding.
      const auto inputs = cast_inputs(*t);
      auto src = to_device(gpu, inputs);
      dl::DeviceBuffer<std::uint16_t> narrow(gpu, inputs.size());
      auto widened = unwritten(gpu, inputs.size());
      dl::gpu::launch_cast_to_half_format(t->format, inputs.size(), src.data(), narrow.data(),
                                          limits, gpu.stream());
      dl::gpu::launch_cast_to_float(t->format, inputs.size(), narrow.data(), widened.data(), limits,
                                    gpu.stream());
      const auto got = to_host(gpu, widened);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        INFO("input " << inputs[i] << ", got " << got[i]);
        REQUIRE(same_float(got[i], reference_round(inputs[i], *t)));
      }

      // Every 16-bit pattern widens to its value and narrows back to itself (NaN stays NaN).
      constexpr std::size_t kPatterns = std::size_t{1} << 16;
      std::vector<std::uint16_t> patterns(kPatterns);
      for (std::size_t i = 0; i < kPatterns; ++i) patterns[i] = static_cast<std::uint16_t>(i);
      auto gpatterns = to_device(gpu, patterns);
      auto values = unwritten(gpu, kPatterns);
      dl::DeviceBuffer<std::uint16_t> back(gpu, kPatterns);
      dl::gpu::launch_cast_to_float(t->format, kPatterns, gpatterns.data(), values.data(), limits,
                                    gpu.stream());
      dl::gpu::launch_cast_to_half_format(t->format, kPatterns, values.data(), back.data(), limits,
                                          gpu.stream());
      const auto host_values = to_host(gpu, values);
      const auto host_back = to_host(gpu, back);
      for (std::size_t i = 0; i < kPatterns; ++i) {
        const float expected = reference_decode(patterns[i], *t);
        INFO("pattern " << i << ": widened " << host_values[i] << ", expected " << expected);
        REQUIRE(same_float(host_values[i], expected));
        if (!std::isnan(expected)) REQUIRE(host_back[i] == patterns[i]);
      }
    }
  }
}
