#include "data/image_resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dl {
namespace {

constexpr float kMaxByte = 255.0f;

// The source pixels one output pixel reads, and their weights (summing to 1).
struct Taps {
  int first = 0;
  std::vector<float> weights;
};

// Output pixel o of `out_size` covers source coordinates [start + o*step, start + (o+1)*step)
// with step = extent / out_size.
std::vector<Taps> filter_taps(double start, double extent, int src_size, int out_size) {
  const double step = extent / out_size;
  const double radius = std::max(1.0, step);
  std::vector<Taps> taps(static_cast<std::size_t>(out_size));
  for (int o = 0; o < out_size; ++o) {
    const double center = start + (o + 0.5) * step;
    const int lo = std::max(0, static_cast<int>(std::floor(center - radius)));
    const int hi = std::min(src_size, static_cast<int>(std::ceil(center + radius)));
    Taps& t = taps[static_cast<std::size_t>(o)];
    t.first = lo;
    double sum = 0.0;
    for (int i = lo; i < hi; ++i) {
      const double w = std::max(0.0, 1.0 - std::abs((i + 0.5 - center) / radius));
      t.weights.push_back(static_cast<float>(w));
      sum += w;
    }
    // A window at the border may hold fewer taps: the ones it has are renormalized.
    for (float& w : t.weights) w = static_cast<float>(w / sum);
  }
  return taps;
}

std::uint8_t to_byte(float v) {
  return static_cast<std::uint8_t>(std::clamp(std::nearbyint(v), 0.0f, kMaxByte));
}

void copy_to_planes(const DecodedImage& image, std::uint8_t* out) {
  const std::size_t plane = static_cast<std::size_t>(image.width) * image.height;
  for (std::size_t p = 0; p < plane; ++p)
    for (int c = 0; c < image.channels; ++c)
      out[static_cast<std::size_t>(c) * plane + p] = image.pixels[p * image.channels + c];
}

}  // namespace

void fit_image(const DecodedImage& image, int height, int width, ImageResize mode,
               std::uint8_t* out) {
  if (image.width == width && image.height == height) {
    copy_to_planes(image, out);
    return;
  }
  double x0 = 0.0, y0 = 0.0, extent_x = image.width, extent_y = image.height;
  if (mode == ImageResize::kCenterCrop) {
    const double scale =
        std::max(static_cast<double>(width) / image.width, static_cast<double>(height) / image.height);
    extent_x = width / scale;
    extent_y = height / scale;
    x0 = (image.width - extent_x) / 2.0;
    y0 = (image.height - extent_y) / 2.0;
  }
  const std::vector<Taps> columns = filter_taps(x0, extent_x, image.width, width);
  const std::vector<Taps> rows = filter_taps(y0, extent_y, image.height, height);
  const int channels = image.channels;
  // Horizontal pass over every source row, then the vertical pass into the planes.
  std::vector<float> across(static_cast<std::size_t>(image.height) * width * channels);
  for (int y = 0; y < image.height; ++y) {
    const std::uint8_t* src = &image.pixels[static_cast<std::size_t>(y) * image.width * channels];
    float* dst = &across[static_cast<std::size_t>(y) * width * channels];
    for (int x = 0; x < width; ++x) {
      const Taps& t = columns[static_cast<std::size_t>(x)];
      for (int c = 0; c < channels; ++c) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < t.weights.size(); ++k)
          sum += t.weights[k] * src[(static_cast<std::size_t>(t.first) + k) * channels + c];
        dst[static_cast<std::size_t>(x) * channels + c] = sum;
      }
    }
  }
  const std::size_t plane = static_cast<std::size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const Taps& t = rows[static_cast<std::size_t>(y)];
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        float sum = 0.0f;
        for (std::size_t k = 0; k < t.weights.size(); ++k)
          sum += t.weights[k] *
                 across[((static_cast<std::size_t>(t.first) + k) * width + x) * channels + c];
        out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y) * width + x] =
            to_byte(sum);
      }
  }
}

}  // namespace dl
