// Decodes one image file as dl-train's image folders do (src/data/image_decode.hpp) and writes
// its pixels (row-major, channels interleaved) to stdout after a header line
// "WIDTH HEIGHT CHANNELS\n": for tests/cli/image_decode_reference.sh, which compares them with
// Pillow's. With HEIGHT, WIDTH and a resize mode, the image is fitted to that size as for the
// network's input (src/data/image_resize.hpp; JPEGs decoded at the scale image folders take).
//   decode_image FILE CHANNELS [HEIGHT WIDTH centerCrop|stretch]   (CHANNELS: 1 gray, 3 RGB)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/image_decode.hpp"
#include "data/image_resize.hpp"

int main(int argc, char** argv) {
  const int channels = argc == 3 || argc == 6 ? std::atoi(argv[2]) : 0;
  const bool fit = argc == 6;
  const int height = fit ? std::atoi(argv[3]) : 0, width = fit ? std::atoi(argv[4]) : 0;
  const std::string mode = fit ? argv[5] : "";
  if ((channels != 1 && channels != 3) ||
      (fit && (height < 1 || width < 1 || (mode != "centerCrop" && mode != "stretch")))) {
    std::fprintf(stderr,
                 "usage: decode_image FILE CHANNELS [HEIGHT WIDTH centerCrop|stretch] "
                 "(CHANNELS: 1 or 3)\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "decode_image: cannot open %s\n", argv[1]);
    return 2;
  }
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                        std::istreambuf_iterator<char>());
  try {
    const dl::DecodedImage image =
        dl::decode_image(bytes.data(), bytes.size(), channels, width, height);
    if (!fit) {
      std::printf("%d %d %d\n", image.width, image.height, image.channels);
      std::fwrite(image.pixels.data(), 1, image.pixels.size(), stdout);
      return 0;
    }
    // fit_image writes channels x height x width; the output is interleaved like the above.
    std::vector<std::uint8_t> planes(static_cast<std::size_t>(channels) * height * width);
    dl::fit_image(image, height, width,
                  mode == "stretch" ? dl::ImageResize::kStretch : dl::ImageResize::kCenterCrop,
                  planes.data());
    std::vector<std::uint8_t> pixels(planes.size());
    const std::size_t plane = static_cast<std::size_t>(height) * width;
    for (std::size_t i = 0; i < plane; ++i)
      for (int c = 0; c < channels; ++c) pixels[i * channels + c] = planes[c * plane + i];
    std::printf("%d %d %d\n", width, height, channels);
    std::fwrite(pixels.data(), 1, pixels.size(), stdout);
  } catch (const dl::ImageDecodeError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 3;
  }
  return 0;
}
