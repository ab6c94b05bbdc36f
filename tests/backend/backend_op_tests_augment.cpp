// gather_transformed (the input pipeline's crop, flip and normalization, backend/ops/augment.hpp)
// on every backend under test: against a reference built the long way (the padded image
// materialized, cropped, then mirrored), the CPU backend's bits, and the contract's properties:
// a sample's draw follows its index, not its position in the batch, and changes with the epoch.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backend_op_test_support.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "same_bits.hpp"

namespace dl::testing {
namespace {

constexpr int kChannels = 3, kRows = 5, kCols = 6, kPadding = 2, kClasses = 4;
constexpr std::int32_t kSamples = 9;
constexpr float kSentinel = -7.0f;

struct AugmentData {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  std::vector<float> mean{0.25f, 0.5f, 0.125f}, sd{0.3f, 0.2f, 0.7f};
};

AugmentData augment_data() {
  AugmentData d;
  const std::size_t bytes = static_cast<std::size_t>(kSamples) * kChannels * kRows * kCols;
  for (std::size_t i = 0; i < bytes; ++i) d.pixels.push_back(static_cast<std::uint8_t>(i * 37));
  for (std::int32_t i = 0; i < kSamples; ++i) d.labels.push_back(i % kClasses);
  return d;
}

ops::SampleTransform transform(bool augment, bool normalize, std::int64_t epoch) {
  ops::SampleTransform t;
  t.channels = kChannels;
  t.rows = kRows;
  t.cols = kCols;
  t.augment = augment;
  t.crop_padding = kPadding;
  t.horizontal_flip = true;
  t.normalize = normalize;
  t.seed = 11;
  t.epoch = epoch;
  return t;
}

struct Batch {
  std::vector<float> images;  // one sample longer than the batch: the sentinel must survive
  std::vector<std::int32_t> labels;
};

Batch gather(Backend& b, const AugmentData& d, const ops::SampleTransform& t,
             const std::vector<std::int32_t>& indices) {
  Io io(b);
  const std::size_t n = indices.size(), sample = t.sample_bytes();
  float* images = io.put(std::vector<float>((n + 1) * sample, kSentinel));
  std::int32_t* labels = io.put(std::vector<std::int32_t>(n + 1, -1));
  b.gather_transformed(io.put(d.pixels), io.put(d.labels), t, io.put(indices), static_cast<int>(n),
                       io.put(d.mean), io.put(d.sd), images, labels);
  return {io.get(images, (n + 1) * sample), io.get(labels, n + 1)};
}

// The long way round: pad, crop at the draw's corner, mirror, scale, normalize (in double).
std::vector<double> reference(const AugmentData& d, const ops::SampleTransform& t,
                              const std::vector<std::int32_t>& indices) {
  const int pad = t.augment ? t.crop_padding : 0;
  const int prows = kRows + 2 * pad, pcols = kCols + 2 * pad;
  std::vector<double> out;
  for (const std::int32_t s : indices) {
    const ops::AugmentDraw draw = ops::augment_draw(t, s);
    for (int c = 0; c < kChannels; ++c) {
      std::vector<double> padded(static_cast<std::size_t>(prows) * pcols, 0.0);
      for (int y = 0; y < kRows; ++y)
        for (int x = 0; x < kCols; ++x)
          padded[static_cast<std::size_t>(y + pad) * pcols + x + pad] =
              d.pixels[((static_cast<std::size_t>(s) * kChannels + c) * kRows + y) * kCols + x] /
              255.0;
      for (int y = 0; y < kRows; ++y) {
        std::vector<double> row;
        for (int x = 0; x < kCols; ++x)
          row.push_back(padded[static_cast<std::size_t>(y + draw.dy) * pcols + x + draw.dx]);
        for (int x = 0; x < kCols; ++x) {
          const double v = draw.flip ? row[static_cast<std::size_t>(kCols - 1 - x)]
                                     : row[static_cast<std::size_t>(x)];
          out.push_back(t.normalize ? (v - d.mean[c]) / d.sd[c] : v);
        }
      }
    }
  }
  return out;
}


std::vector<float> sample_of(const Batch& batch, std::size_t i) {
  const std::size_t size = static_cast<std::size_t>(kChannels) * kRows * kCols;
  const auto first = batch.images.begin() + static_cast<std::ptrdiff_t>(i * size);
  return {first, first + static_cast<std::ptrdiff_t>(size)};
}

TEST_CASE("op gather_transformed: crop, flip, normalize: reference, CPU bits, draws by index") {
  const AugmentData d = augment_data();
  const std::vector<std::int32_t> indices{4, 0, 8, 4, 2, 7, 1, 3, 5, 6};
  const std::size_t n = indices.size(), sample = transform(true, true, 0).sample_bytes();
  CpuBackend cpu;
  int flips = 0, shifted = 0;
  for (int s = 0; s < kSamples; ++s) {
    const ops::AugmentDraw draw = ops::augment_draw(transform(true, true, 3), s);
    flips += draw.flip ? 1 : 0;
    shifted += draw.dy != kPadding || draw.dx != kPadding ? 1 : 0;
    CHECK((draw.dy >= 0 && draw.dy <= 2 * kPadding && draw.dx >= 0 && draw.dx <= 2 * kPadding));
  }
  CHECK(flips > 0);  // the samples exercise flips and crops at all
  CHECK(shifted > 0);
  for (const bool augment : {true, false}) {
    for (const bool normalize : {true, false}) {
      INFO("augment " << augment << ", normalize " << normalize);
      const ops::SampleTransform t = transform(augment, normalize, 3);
      const Batch want = gather(cpu, d, t, indices);
      for_each_backend([&](Backend& b) {
        const Batch got = gather(b, d, t, indices);
        const std::vector<float> batch(
            got.images.begin(), got.images.begin() + static_cast<std::ptrdiff_t>(n * sample));
        near("vs reference", batch, reference(d, t, indices), kReference);
        CHECK(same_bits(got.images, want.images));
        for (std::size_t i = n * sample; i < got.images.size(); ++i)
          REQUIRE(got.images[i] == kSentinel);
        for (std::size_t i = 0; i < n; ++i)
          CHECK(got.labels[i] == d.labels[static_cast<std::size_t>(indices[i])]);
        CHECK(got.labels[n] == -1);
        // Sample 4 at positions 0 and 3: one draw.
        CHECK(same_bits(sample_of(got, 0), sample_of(got, 3)));
      });
    }
  }
}

TEST_CASE("op gather_transformed: another epoch draws again; no samples writes nothing") {
  const AugmentData d = augment_data();
  std::vector<std::int32_t> all;
  for (std::int32_t s = 0; s < kSamples; ++s) all.push_back(s);
  for_each_backend([&](Backend& b) {
    const Batch first = gather(b, d, transform(true, false, 0), all);
    const Batch again = gather(b, d, transform(true, false, 0), all);
    const Batch next = gather(b, d, transform(true, false, 1), all);
    CHECK(same_bits(first.images, again.images));
    CHECK_FALSE(same_bits(first.images, next.images));
    const Batch none = gather(b, d, transform(true, true, 0), {});
    CHECK(none.images == std::vector<float>(none.images.size(), kSentinel));
    CHECK(none.labels.front() == -1);
  });
}

}  // namespace
}  // namespace dl::testing
