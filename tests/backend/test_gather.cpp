// gather_samples on the CPU backend against Dataset::gather, the host path it replaces: the same
// bits for every byte value, for the first and last samples and for repeated indices.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/device_buffer.hpp"
#include "data/dataset.hpp"
#include "same_bits.hpp"

namespace {

using dl::testing::same_bits;

constexpr int kRows = 5, kCols = 7, kClasses = 6;
constexpr std::int64_t kSamples = 11;
constexpr int kByteValues = 256;
// Written before the gather: a value the op must overwrite (or, past the batch, leave alone).
constexpr float kSentinel = -7.0f;
constexpr std::int32_t kLabelSentinel = -1;

// Pixels cycle through every byte value; labels differ between neighbours.
dl::Dataset every_byte_dataset() {
  const std::size_t bytes = static_cast<std::size_t>(kSamples) * kRows * kCols;
  std::vector<std::uint8_t> pixels(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pixels[i] = static_cast<std::uint8_t>(i % kByteValues);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(kSamples));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<std::int32_t>(i % kClasses);
  return dl::Dataset(kRows, kCols, std::move(pixels), std::move(labels), kClasses);
}


struct Gathered {
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};

// gather_samples through backend memory, into buffers one sample longer than the batch.
Gathered gather_on_backend(dl::Backend& backend, const dl::Dataset& data,
                           const std::vector<std::int32_t>& indices) {
  const std::size_t sample = data.sample_floats();
  const std::size_t n = indices.size();
  dl::DeviceBuffer<std::uint8_t> pixels(backend, data.pixels().size());
  dl::IndexBuffer labels(backend, data.labels().size());
  dl::IndexBuffer batch_indices(backend, n);
  backend.upload(pixels.data(), data.pixels().data(), pixels.bytes());
  backend.upload(labels.data(), data.labels().data(), labels.bytes());
  backend.upload(batch_indices.data(), indices.data(), batch_indices.bytes());

  Gathered out{std::vector<float>((n + 1) * sample, kSentinel),
               std::vector<std::int32_t>(n + 1, kLabelSentinel)};
  dl::FloatBuffer images(backend, out.images.size());
  dl::IndexBuffer batch_labels(backend, out.labels.size());
  backend.upload(images.data(), out.images.data(), images.bytes());
  backend.upload(batch_labels.data(), out.labels.data(), batch_labels.bytes());
  backend.gather_samples(pixels.data(), labels.data(), sample, batch_indices.data(),
                         static_cast<int>(n), images.data(), batch_labels.data());
  backend.download(out.images.data(), images.data(), images.bytes());
  backend.download(out.labels.data(), batch_labels.data(), batch_labels.bytes());
  return out;
}

}  // namespace

TEST_CASE("gather_samples equals Dataset::gather bit for bit", "[backend][gather]") {
  const dl::Dataset data = every_byte_dataset();
  const std::int32_t last = static_cast<std::int32_t>(kSamples - 1);
  const std::vector<std::int32_t> indices{0, last, 3, 3, 0, 7, last, 1};
  const std::size_t sample = data.sample_floats();
  const std::size_t n = indices.size();

  std::vector<std::int64_t> wide(indices.begin(), indices.end());
  std::vector<float> host_images(n * sample);
  std::vector<std::int32_t> host_labels(n);
  data.gather(wide.data(), n, host_images.data(), host_labels.data());

  dl::CpuBackend cpu;
  const Gathered got = gather_on_backend(cpu, data, indices);
  const std::vector<float> batch(got.images.begin(),
                                 got.images.begin() + static_cast<std::ptrdiff_t>(n * sample));
  CHECK(same_bits(batch, host_images));
  CHECK(std::vector<std::int32_t>(got.labels.begin(), got.labels.begin() + n) == host_labels);
  // Nothing is written past the batch.
  for (std::size_t i = n * sample; i < got.images.size(); ++i) REQUIRE(got.images[i] == kSentinel);
  CHECK(got.labels[n] == kLabelSentinel);

  // Independently of the host path: labels and the pixel scale of known bytes.
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(got.labels[i] == data.labels()[static_cast<std::size_t>(indices[i])]);
  }
  const std::size_t last_first_byte = static_cast<std::size_t>(last) * sample;
  CHECK(batch[sample] == static_cast<float>(data.pixels()[last_first_byte]) / 255.0f);
  CHECK(batch[0] == 0.0f);  // sample 0 starts at byte 0
}

TEST_CASE("gather_samples: every byte value maps as the host maps it", "[backend][gather]") {
  const dl::Dataset data = every_byte_dataset();
  // Samples 0..7 hold bytes 0..279, so all 256 byte values.
  std::vector<std::int32_t> indices;
  const std::size_t samples_for_all_bytes =
      (kByteValues + data.sample_floats() - 1) / data.sample_floats();
  for (std::size_t i = 0; i < samples_for_all_bytes; ++i) indices.push_back(static_cast<int>(i));
  std::vector<std::int64_t> wide(indices.begin(), indices.end());
  std::vector<float> host(indices.size() * data.sample_floats());
  std::vector<std::int32_t> host_labels(indices.size());
  data.gather(wide.data(), indices.size(), host.data(), host_labels.data());

  dl::CpuBackend cpu;
  const Gathered got = gather_on_backend(cpu, data, indices);
  const std::vector<float> batch(got.images.begin(),
                                 got.images.begin() + static_cast<std::ptrdiff_t>(host.size()));
  REQUIRE(same_bits(batch, host));
  // Here batch value b is byte b.
  constexpr std::size_t kByteFiftyOne = 51;  // 51 / 255 = 0.2 exactly
  CHECK(batch[kByteFiftyOne] == 0.2f);
  CHECK(batch[kByteValues - 1] == 1.0f);
  CHECK(batch[1] > 0.0f);
}

TEST_CASE("gather_samples with no samples writes nothing", "[backend][gather]") {
  const dl::Dataset data = every_byte_dataset();
  dl::CpuBackend cpu;
  const Gathered got = gather_on_backend(cpu, data, {});
  for (const float v : got.images) CHECK(v == kSentinel);
  CHECK(got.labels.front() == kLabelSentinel);
}

// The device-resident path with the input pipeline (gather_transformed) against the host loader's
// Dataset::gather_training and Dataset::gather: the same bits, training batches cropped and
// flipped, evaluation batches only normalized.
TEST_CASE("gather_transformed equals the host loader's batches bit for bit", "[backend][gather]") {
  constexpr int kChannels = 3;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kSamples) * kChannels * kRows * kCols);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 53);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(kSamples));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
  dl::Dataset data(kChannels, kRows, kCols, pixels, labels, kClasses);
  dl::InputPipeline pipeline;
  pipeline.mean = {0.4f, 0.5f, 0.6f};
  pipeline.std = {0.25f, 0.3f, 0.35f};
  pipeline.crop_padding = 3;
  pipeline.horizontal_flip = true;
  pipeline.seed = 19;
  data.set_pipeline(pipeline);

  const std::vector<std::int32_t> indices{10, 0, 5, 5, 2, 9, 1};
  const std::vector<std::int64_t> wide(indices.begin(), indices.end());
  const std::size_t n = indices.size(), sample = data.sample_floats();
  dl::CpuBackend cpu;
  dl::DeviceBuffer<std::uint8_t> device_pixels(cpu, pixels.size());
  dl::IndexBuffer device_labels(cpu, labels.size()), device_indices(cpu, n);
  dl::FloatBuffer mean(cpu, kChannels), sd(cpu, kChannels), images(cpu, n * sample);
  dl::IndexBuffer batch_labels(cpu, n);
  cpu.upload(device_pixels.data(), pixels.data(), device_pixels.bytes());
  cpu.upload(device_labels.data(), labels.data(), device_labels.bytes());
  cpu.upload(device_indices.data(), indices.data(), device_indices.bytes());
  cpu.upload(mean.data(), pipeline.mean.data(), mean.bytes());
  cpu.upload(sd.data(), pipeline.std.data(), sd.bytes());

  for (const bool training : {true, false}) {
    for (const int epoch : {0, 4}) {
      INFO("training " << training << ", epoch " << epoch);
      std::vector<float> host(n * sample), device(n * sample);
      std::vector<std::int32_t> host_labels(n), device_labels_out(n);
      if (training) {
        data.gather_training(wide.data(), n, epoch, host.data(), host_labels.data());
      } else {
        data.gather(wide.data(), n, host.data(), host_labels.data());
      }
      const dl::ops::SampleTransform t =
          pipeline.sample_transform(kChannels, kRows, kCols, training, epoch);
      cpu.gather_transformed(device_pixels.data(), device_labels.data(), t, device_indices.data(),
                             static_cast<int>(n), mean.data(), sd.data(), images.data(),
                             batch_labels.data());
      cpu.download(device.data(), images.data(), images.bytes());
      cpu.download(device_labels_out.data(), batch_labels.data(), batch_labels.bytes());
      CHECK(same_bits(device, host));
      CHECK(device_labels_out == host_labels);
    }
  }
}
