// The shape of one sample as it flows between layers: channels x height x width for
// convolutional data (NCHW in memory, batch outermost), or a flat vector (height = width = 1).
#pragma once

#include <cstddef>
#include <string>

namespace dl {

struct SampleShape {
  int channels = 1;
  int height = 1;
  int width = 1;
  bool spatial = false;  // true after convolution/subsampling; false for feed-forward vectors

  std::size_t size() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }
  static SampleShape flat(int n) { return SampleShape{n, 1, 1, false}; }
  static SampleShape image(int c, int h, int w) { return SampleShape{c, h, w, true}; }
  bool operator==(const SampleShape& o) const {
    return channels == o.channels && height == o.height && width == o.width &&
           spatial == o.spatial;
  }
  bool operator!=(const SampleShape& o) const { return !(*this == o); }
  std::string str() const {
    return spatial ? std::to_string(channels) + "x" + std::to_string(height) + "x" +
                         std::to_string(width)
                   : std::to_string(channels);
  }
};

}  // namespace dl
