#include "data/input_pipeline.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/random.hpp"

namespace dl {

namespace {

constexpr float kMaxByte = 255.0f;
constexpr int kByteValues = 256;
constexpr std::uint64_t kDrawsPerSample = 3;

}  // namespace

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

AugmentDraw draw_augmentation(const InputPipeline& p, int epoch, std::int64_t index) {
  RandomStream rng(p.seed, kAugmentationStreamBase + static_cast<std::uint64_t>(epoch),
                   static_cast<std::uint64_t>(index) * kDrawsPerSample);
  AugmentDraw d;
  const bool flip = rng.below(2) == 1;
  const auto span = static_cast<std::uint64_t>(2 * p.crop_padding + 1);
  d.dy = static_cast<int>(rng.below(span));
  d.dx = static_cast<int>(rng.below(span));
  d.flip = p.horizontal_flip && flip;
  return d;
}

void transform_sample(const std::uint8_t* src, int channels, int rows, int cols,
                      const InputPipeline& p, const AugmentDraw* draw, float* dst) {
  const int pad = draw != nullptr ? p.crop_padding : 0;
  const int dy = draw != nullptr ? draw->dy : 0;
  const int dx = draw != nullptr ? draw->dx : 0;
  const bool flip = draw != nullptr && draw->flip;
  const auto plane = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  for (int c = 0; c < channels; ++c) {
    const std::uint8_t* in = src + static_cast<std::size_t>(c) * plane;
    float* out = dst + static_cast<std::size_t>(c) * plane;
    const bool norm = p.normalizes();
    const float mean = norm ? p.mean[static_cast<std::size_t>(c)] : 0.0f;
    const float sd = norm ? p.std[static_cast<std::size_t>(c)] : 1.0f;
    for (int y = 0; y < rows; ++y) {
      const int sy = y + dy - pad;
      for (int x = 0; x < cols; ++x) {
        const int sx = (flip ? cols - 1 - x : x) + dx - pad;
        const bool inside = sy >= 0 && sy < rows && sx >= 0 && sx < cols;
        const float v =
            inside ? static_cast<float>(in[static_cast<std::size_t>(sy) * cols + sx]) / kMaxByte
                   : 0.0f;
        out[static_cast<std::size_t>(y) * cols + x] = norm ? (v - mean) / sd : v;
      }
    }
  }
}

ChannelStats channel_stats(const std::vector<std::uint8_t>& pixels, int channels,
                           std::size_t plane) {
  const auto ch = static_cast<std::size_t>(channels);
  std::vector<std::array<std::uint64_t, kByteValues>> counts(ch);
  for (auto& c : counts) c.fill(0);
  const std::size_t sample = ch * plane;
  for (std::size_t i = 0; i < pixels.size(); ++i) ++counts[(i % sample) / plane][pixels[i]];
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
