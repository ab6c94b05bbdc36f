#include "data/input_pipeline.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace dl {


std::string InputPipeline::describe() const {
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (normalizes())
    add(fmt::format("normalize per channel, mean [{:.4f}] std [{:.4f}]", fmt::join(mean, ", "),
                    fmt::join(std, ", ")));
  if (crop_padding > 0) add(fmt::format("random crop (padding {})", crop_padding));
  if (horizontal_flip) add("random horizontal flip");
  return text.empty() ? "none" : text;
}

ops::SampleTransform InputPipeline::sample_transform(int channels, int rows, int cols, bool augment,
                                                     int epoch) const {
  ops::SampleTransform t;
  t.channels = channels;
  t.rows = rows;
  t.cols = cols;
  t.augment = augment && augments();
  t.crop_padding = crop_padding;
  t.horizontal_flip = horizontal_flip;
  t.normalize = normalizes();
  t.seed = seed;
  t.epoch = epoch;
  return t;
}

AugmentDraw draw_augmentation(const InputPipeline& p, int epoch, std::int64_t index) {
  // Any shape: the draws depend on the seed, the epoch and the index only.
  return ops::augment_draw(p.sample_transform(1, 1, 1, true, epoch), index);
}

void transform_sample(const std::uint8_t* src, int channels, int rows, int cols,
                      const InputPipeline& p, const AugmentDraw* draw, float* dst) {
  ops::SampleTransform t = p.sample_transform(channels, rows, cols, draw != nullptr, 0);
  // A given draw is applied as given, also for a pipeline that does not augment (tests).
  t.augment = draw != nullptr;
  ops::transform_sample(src, t, draw != nullptr ? *draw : AugmentDraw{}, p.mean.data(),
                        p.std.data(), dst);
}

ChannelByteCounts channel_byte_counts(const std::uint8_t* pixels, std::size_t size, int channels,
                                      std::size_t plane) {
  const auto ch = static_cast<std::size_t>(channels);
  ChannelByteCounts counts(ch);
  for (auto& c : counts) c.fill(0);
  const std::size_t sample = ch * plane;
  for (std::size_t i = 0; i < size; ++i) ++counts[(i % sample) / plane][pixels[i]];
  return counts;
}

ChannelStats channel_stats(const std::vector<std::uint8_t>& pixels, int channels,
                           std::size_t plane) {
  return channel_stats(channel_byte_counts(pixels.data(), pixels.size(), channels, plane));
}

ChannelStats channel_stats(const ChannelByteCounts& counts) {
  ChannelStats stats;
  for (const auto& c : counts) {
    double n = 0.0, sum = 0.0;
    for (int b = 0; b < kByteValues; ++b) {
      n += static_cast<double>(c[b]);
      sum += static_cast<double>(c[b]) * (b / 255.0);
    }
    const double mean = n > 0 ? sum / n : 0.0;
    double squares = 0.0;
    for (int b = 0; b < kByteValues; ++b)
      squares += static_cast<double>(c[b]) * (b / 255.0 - mean) * (b / 255.0 - mean);
    const double sd = n > 0 ? std::sqrt(squares / n) : 0.0;
    stats.mean.push_back(static_cast<float>(mean));
    // A constant channel has no spread: dividing by 1 keeps it finite.
    stats.std.push_back(sd > 0.0 ? static_cast<float>(sd) : 1.0f);
  }
  return stats;
}

std::string format_normalization(const InputPipeline& p) {
  return fmt::format("{:.9g};{:.9g}", fmt::join(p.mean, " "), fmt::join(p.std, " "));
}

void parse_normalization(const std::string& text, InputPipeline& p) {
  const std::size_t semicolon = text.find(';');
  if (semicolon == std::string::npos) throw std::invalid_argument("no ';' in " + text);
  auto read = [](const std::string& part) {
    std::istringstream in(part);
    std::vector<float> values;
    float v = 0.0f;
    while (in >> v) values.push_back(v);
    if (!in.eof()) throw std::invalid_argument("not a list of numbers: " + part);
    return values;
  };
  p.mean = read(text.substr(0, semicolon));
  p.std = read(text.substr(semicolon + 1));
  if (p.mean.empty() || p.mean.size() != p.std.size())
    throw std::invalid_argument("mean and std differ in length: " + text);
}

}  // namespace dl
