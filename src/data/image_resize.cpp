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

// centerCrop on one axis as torchvision's Resize(side) + CenterCrop take it, so that an image
// reads as a PyTorch pipeline reads it: the fitting axis (source fit_src, input fit_out) is
// resized to the input exactly and this one (source src, input out; the fitting axis itself
// included) to int(fit_out x src / fit_src), truncated as torchvision truncates; the crop then
// starts round((resized - out) / 2) pixels in, rounded half to even as Python rounds. In source
// coordinates: the window the resampling reads.
struct CropAxis {
  double start, extent;
};
CropAxis crop_axis(int src, int out, int fit_src, int fit_out) {
  const int resized = std::max(out, static_cast<int>(static_cast<double>(fit_out) * src / fit_src));
  const double offset = std::nearbyint((resized - out) / 2.0);
  const double step = static_cast<double>(src) / resized;
  return {offset * step, out * step};
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
    // The axis that needs the larger scale fits exactly; the other follows from it.
    const bool rows_fit =
        static_cast<double>(height) / image.height >= static_cast<double>(width) / image.width;
    const int fit_src = rows_fit ? image.height : image.width;
    const int fit_out = rows_fit ? height : width;
    const CropAxis x = crop_axis(image.width, width, fit_src, fit_out);
    const CropAxis y = crop_axis(image.height, height, fit_src, fit_out);
    x0 = x.start;
    extent_x = x.extent;
    y0 = y.start;
    extent_y = y.extent;
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
